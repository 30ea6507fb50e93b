#include "kernels/rope.h"

#include <cmath>
#include <cstddef>

namespace ff {
namespace {

// Follows HF's LlamaRotaryEmbedding in the kernel's precision: inv_freq = 1 / theta^(2i/D),
// angle = t * inv_freq, both rounded to T, so the float tables match PyTorch's float32 ones.
template <class T>
void tables(T* cos, T* sin, int Tn, int D, T theta) {
  const int half = D / 2;
  for (int t = 0; t < Tn; ++t) {
    for (int i = 0; i < half; ++i) {
      const T inv_freq = T(1) / std::pow(theta, T(2 * i) / T(D));
      const T angle = T(t) * inv_freq;
      cos[static_cast<size_t>(t) * half + i] = std::cos(angle);
      sin[static_cast<size_t>(t) * half + i] = std::sin(angle);
    }
  }
}

// Rotate-half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin). The backward applies the
// transpose, i.e. the same rotation with sin negated.
template <class T>
void rotate(T* x, const T* cos, const T* sin, int B, int Tn, int heads, int D, int row_stride,
            T sign) {
  const int half = D / 2;
  const int rows = B * Tn;
#pragma omp parallel for schedule(static)
  for (int row = 0; row < rows; ++row) {
    const int t = row % Tn;
    const T* c = cos + static_cast<size_t>(t) * half;
    const T* s = sin + static_cast<size_t>(t) * half;
    T* xr = x + static_cast<size_t>(row) * row_stride;
    for (int h = 0; h < heads; ++h) {
      T* x1 = xr + static_cast<size_t>(h) * D;
      T* x2 = x1 + half;
#pragma omp simd
      for (int i = 0; i < half; ++i) {
        const T a = x1[i], b = x2[i], si = sign * s[i];
        x1[i] = a * c[i] - b * si;
        x2[i] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

void rope_tables(float* cos, float* sin, int T, int D, float theta) {
  tables(cos, sin, T, D, theta);
}
void rope_forward(float* x, const float* cos, const float* sin, int B, int T, int heads, int D,
                  int row_stride) {
  rotate(x, cos, sin, B, T, heads, D, row_stride, 1.0f);
}
void rope_backward(float* dx, const float* cos, const float* sin, int B, int T, int heads, int D,
                   int row_stride) {
  rotate(dx, cos, sin, B, T, heads, D, row_stride, -1.0f);
}
void rope_tables(double* cos, double* sin, int T, int D, double theta) {
  tables(cos, sin, T, D, theta);
}
void rope_forward(double* x, const double* cos, const double* sin, int B, int T, int heads, int D,
                  int row_stride) {
  rotate(x, cos, sin, B, T, heads, D, row_stride, 1.0);
}
void rope_backward(double* dx, const double* cos, const double* sin, int B, int T, int heads, int D,
                   int row_stride) {
  rotate(dx, cos, sin, B, T, heads, D, row_stride, -1.0);
}

}  // namespace ff
