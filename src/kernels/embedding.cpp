#include "kernels/embedding.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

namespace ff {
namespace {

// Column blocks own disjoint slices of every table row, so threads never collide on a repeated
// token, and each slice is summed in row order whatever the thread count.
constexpr int kColBlock = 64;

// The table holds rows [first, first + count) of the vocabulary: all of it (first 0, count V) in
// the serial model, one rank's slice under tensor parallelism, where a token another rank holds
// looks up zeros and adds no gradient here.
bool holds(int32_t token, int first, int count) { return token >= first && token - first < count; }

template <class T>
void forward(T* out, const int32_t* tokens, const T* table, int N, int C, int first, int count) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    T* dst = out + static_cast<size_t>(n) * C;
    if (holds(tokens[n], first, count))
      std::memcpy(dst, table + static_cast<size_t>(tokens[n] - first) * C, sizeof(T) * C);
    else
      std::memset(dst, 0, sizeof(T) * C);
  }
}

template <class T>
void backward(T* dtable, const T* dout, const int32_t* tokens, int N, int C, int first, int count) {
  const int blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kColBlock;
    const int nc = std::min(kColBlock, C - c0);
    for (int n = 0; n < N; ++n) {
      if (!holds(tokens[n], first, count)) continue;
      T* dst = dtable + static_cast<size_t>(tokens[n] - first) * C + c0;
      const T* src = dout + static_cast<size_t>(n) * C + c0;
#pragma omp simd
      for (int c = 0; c < nc; ++c) dst[c] += src[c];
    }
  }
}

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* table, int N, int C) {
  forward(out, tokens, table, N, C, 0, std::numeric_limits<int>::max());
}
void embedding_backward(float* dtable, const float* dout, const int32_t* tokens, int N, int C,
                        int V) {
  backward(dtable, dout, tokens, N, C, 0, V);
}
void embedding_forward_slice(float* out, const int32_t* tokens, const float* table, int N, int C,
                             int first, int count) {
  forward(out, tokens, table, N, C, first, count);
}
void embedding_backward_slice(float* dtable, const float* dout, const int32_t* tokens, int N,
                              int C, int first, int count) {
  backward(dtable, dout, tokens, N, C, first, count);
}
void embedding_forward(double* out, const int32_t* tokens, const double* table, int N, int C) {
  forward(out, tokens, table, N, C, 0, std::numeric_limits<int>::max());
}
void embedding_backward(double* dtable, const double* dout, const int32_t* tokens, int N, int C,
                        int V) {
  backward(dtable, dout, tokens, N, C, 0, V);
}

}  // namespace ff
