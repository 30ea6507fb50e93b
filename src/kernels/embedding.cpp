#include "kernels/embedding.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace ff {
namespace {

// Column blocks own disjoint slices of every table row, so threads never collide on a repeated
// token, and each slice is summed in row order whatever the thread count.
constexpr int kColBlock = 64;

template <class T>
void forward(T* out, const int32_t* tokens, const T* table, int N, int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    std::memcpy(out + static_cast<size_t>(n) * C, table + static_cast<size_t>(tokens[n]) * C,
                sizeof(T) * C);
  }
}

template <class T>
void backward(T* dtable, const T* dout, const int32_t* tokens, int N, int C, int V) {
  const int blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kColBlock;
    const int nc = std::min(kColBlock, C - c0);
    for (int n = 0; n < N; ++n) {
      T* dst = dtable + static_cast<size_t>(tokens[n]) * C + c0;
      const T* src = dout + static_cast<size_t>(n) * C + c0;
#pragma omp simd
      for (int c = 0; c < nc; ++c) dst[c] += src[c];
    }
  }
}

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* table, int N, int C) {
  forward(out, tokens, table, N, C);
}
void embedding_backward(float* dtable, const float* dout, const int32_t* tokens, int N, int C,
                        int V) {
  backward(dtable, dout, tokens, N, C, V);
}
void embedding_forward(double* out, const int32_t* tokens, const double* table, int N, int C) {
  forward(out, tokens, table, N, C);
}
void embedding_backward(double* dtable, const double* dout, const int32_t* tokens, int N, int C,
                        int V) {
  backward(dtable, dout, tokens, N, C, V);
}

}  // namespace ff
