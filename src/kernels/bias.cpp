#include "kernels/bias.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ff {

void bias_forward(float* y, const float* bias, size_t N, int M, int ldy) {
#pragma omp parallel for schedule(static)
  for (size_t n = 0; n < N; ++n) {
    float* row = y + n * size_t(ldy);
    for (int j = 0; j < M; ++j) row[j] += bias[j];
  }
}

namespace {
// Columns in blocks of 16 so that each row's read of a block is one contiguous load; a thread owns
// whole blocks, so no two threads add into one element.
constexpr int kColumnBlock = 16;

template <class Load>
void column_sums(float* dbias, size_t N, int M, Load load) {
  const int blocks = (M + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < blocks; ++b) {
    const int j0 = b * kColumnBlock, j1 = std::min(M, j0 + kColumnBlock);
    float acc[kColumnBlock] = {};
    for (size_t n = 0; n < N; ++n)
      for (int j = j0; j < j1; ++j) acc[j - j0] += load(n, j);
    for (int j = j0; j < j1; ++j) dbias[j] += acc[j - j0];
  }
}
}  // namespace

void bias_backward(float* dbias, ConstTypedPtr dy, size_t N, int M, int ldy, DType round_to) {
  const size_t ld = size_t(ldy);
  switch (dy.dtype()) {
    case DType::f32: {
      const float* p = static_cast<const float*>(dy.data());
      if (round_to == DType::bf16)
        column_sums(dbias, N, M, [&](size_t n, int j) { return bf16_to_f32(f32_to_bf16(p[n * ld + size_t(j)])); });
      else if (round_to == DType::f16)
        column_sums(dbias, N, M, [&](size_t n, int j) { return f16_to_f32(f32_to_f16(p[n * ld + size_t(j)])); });
      else
        column_sums(dbias, N, M, [&](size_t n, int j) { return p[n * ld + size_t(j)]; });
      return;
    }
    case DType::bf16: {
      const uint16_t* p = static_cast<const uint16_t*>(dy.data());
      column_sums(dbias, N, M, [&](size_t n, int j) { return bf16_to_f32(p[n * ld + size_t(j)]); });
      return;
    }
    case DType::f16: {
      const uint16_t* p = static_cast<const uint16_t*>(dy.data());
      column_sums(dbias, N, M, [&](size_t n, int j) { return f16_to_f32(p[n * ld + size_t(j)]); });
      return;
    }
  }
  throw std::invalid_argument(std::string("bias_backward: no column sum for dtype ") + dtype_name(dy.dtype()));
}

}  // namespace ff
