#pragma once
// A linear layer's bias (Qwen2's q/k/v projections): added to each row of the GEMM's output, and
// its gradient the column sums of the output gradient over every row.
#include <cstddef>

#include "core/dtype.h"

namespace ff {

// y(N, ldy) row n, columns [0, M) += bias(M).
void bias_forward(float* y, const float* bias, size_t N, int M, int ldy);

// dbias(M) += sum over the N rows of dy(N, ldy) columns [0, M). dy may be 16-bit (the rounded copy
// a 16-bit GEMM reads); an fp32 dy with round_to bf16/f16 has each value rounded (nearest even)
// before it is added, as a 16-bit GEMM reading fp32 rounds it: the same sums either way. Each
// column sums in fp32, rows in order, so the result does not depend on the thread count.
// OpenMP-parallel over columns.
void bias_backward(float* dbias, ConstTypedPtr dy, size_t N, int M, int ldy, DType round_to = DType::f32);

}  // namespace ff
