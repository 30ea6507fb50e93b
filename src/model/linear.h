#pragma once
// The three GEMM shapes of a linear layer y = x W^T (W stored (out, in), as PyTorch and Hugging
// Face do), shared by the model's files. They run in the precision of the GEMM context each call
// is handed (kernels/gemm_context.h; the model's, Llama::gemm()): fp32 by default, bf16/f16 inputs
// with fp32 accumulation otherwise.
// The activation operand x may be stored 16-bit already (model/activations.h), and so may
// matmul_dyw_dw's dy (written rounded by the kernel before it); W is fp32, handed in with the
// parameter it is (WeightRef, kernels/gemm_precision.h), and so is dW: fp8 scales by parameter.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/gemm_precision.h"

namespace ff {

// y(N,out) = x(N,in) W^T, overwriting y.
inline void matmul_xwt(const GemmContext& g, float* y, ConstTypedPtr x, WeightRef W, int N, int in, int out) {
  gemm_run_precision(g, false, true, N, out, in, 1.0f, x, in, W.data, in, 0.0f, y, out, GemmRole::forward, W.at);
}
// y16(N,out) = x(N,in) W^T kept 16-bit, rounded by the product as it stores it: true. False: the
// product is in `staging` (N x out floats), fp32, for the caller to round (kernels/gemm_precision.h).
inline bool matmul_xwt_rounded(const GemmContext& g, TypedPtr y16, ConstTypedPtr x, WeightRef W, int N, int in,
                               int out, float* staging) {
  return gemm_forward_rounded(g, y16, x, W, N, out, in, staging);
}
// y(N,out) += x(N,in) W^T (the residual add of o and down rides on beta = 1).
inline void matmul_xwt_add(const GemmContext& g, float* y, ConstTypedPtr x, WeightRef W, int N, int in, int out) {
  gemm_run_precision(g, false, true, N, out, in, 1.0f, x, in, W.data, in, 1.0f, y, out, GemmRole::forward, W.at);
}
// dx(N,in) = dy(N,out) W, overwriting dx.
inline void matmul_dyw(const GemmContext& g, float* dx, const float* dy, WeightRef W, int N, int in, int out) {
  gemm_run_precision(g, false, false, N, in, out, 1.0f, dy, out, W.data, in, 0.0f, dx, in, GemmRole::dgrad, W.at);
}
// dW(out,in) += dy^T x (linear_backward picks the faster operand order for tall weights)
inline void accumulate_dw(const GemmContext& g, WeightGradRef dW, const float* dy, ConstTypedPtr x, int N, int in,
                          int out) {
  accumulate_weight_grad(g, dW, dy, x, N, in, out);
}
// dx(N,in) = dy W, then dW(out,in) += dy^T x unless dW is null: one rounding of dy for both.
inline void matmul_dyw_dw(const GemmContext& g, float* dx, float* dW, ConstTypedPtr dy, ConstTypedPtr x,
                          WeightRef W, int N, int in, int out) {
  linear_backward_run_precision(g, dx, dW, dy, x, W, N, in, out);
}
// Copying and zeroing activation-sized buffers on every thread: done on one, the step's other
// threads wait for it at the next parallel region. Bytes are bytes: the results are unchanged.
inline void copy_rows(float* dst, const float* src, size_t n) {
  constexpr size_t kChunk = size_t(1) << 15;  // 128 KiB per task
  const long chunks = long((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 2)
  for (long c = 0; c < chunks; ++c)
    std::memcpy(dst + size_t(c) * kChunk, src + size_t(c) * kChunk,
                std::min(kChunk, n - size_t(c) * kChunk) * sizeof(float));
}
inline void zero_rows(float* dst, size_t n) {
  constexpr size_t kChunk = size_t(1) << 15;
  const long chunks = long((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 2)
  for (long c = 0; c < chunks; ++c)
    std::memset(dst + size_t(c) * kChunk, 0, std::min(kChunk, n - size_t(c) * kChunk) * sizeof(float));
}

}  // namespace ff
