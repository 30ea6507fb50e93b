#include "kernels/rope.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>

#include "kernels/rope_row.h"
#include "kernels/round_store.h"

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

// One inline body (rope_row.h) for every caller, so the rounded copy gets the very products of the
// in-place rotation.
using rope_detail::rotate_row;

template <class T>
void rotate(T* x, const T* cos, const T* sin, int B, int Tn, int heads, int D, int row_stride,
            T sign) {
  const int half = D / 2;
  const int rows = B * Tn;
#pragma omp parallel for schedule(static)
  for (int row = 0; row < rows; ++row) {
    const int t = row % Tn;
    T* xr = x + static_cast<size_t>(row) * row_stride;
    rotate_row<T>(xr, xr, cos + static_cast<size_t>(t) * half, sin + static_cast<size_t>(t) * half, heads, D,
                  sign);
  }
}

// rope_backward_rounded: per row, q's and k's heads rotated back and v's columns as they are, all
// stored through Store into out's row (dx is read only).
template <class Store>
void backward_rounded(typename Store::type* out, const float* dx, const float* cos, const float* sin, int B,
                      int Tn, int heads, int kv_heads, int D, int row_stride) {
  const int half = D / 2, rotated = (heads + kv_heads) * D;
  const int rows = B * Tn;
#pragma omp parallel for schedule(static)
  for (int row = 0; row < rows; ++row) {
    const int t = row % Tn;
    const float* c = cos + static_cast<size_t>(t) * half;
    const float* s = sin + static_cast<size_t>(t) * half;
    const float* xr = dx + static_cast<size_t>(row) * row_stride;
    typename Store::type* yr = out + static_cast<size_t>(row) * row_stride;
    rotate_row<float, Store>(yr, xr, c, s, heads, D, -1.0f);
    const size_t k_at = static_cast<size_t>(heads) * D;
    rotate_row<float, Store>(yr + k_at, xr + k_at, c, s, kv_heads, D, -1.0f);
#pragma omp simd
    for (int i = rotated; i < row_stride; ++i) yr[i] = Store::cast(xr[i]);
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
void rope_backward_rounded(TypedPtr out, const float* dx, const float* cos, const float* sin, int B, int T,
                           int heads, int kv_heads, int D, int row_stride) {
  if (out.dtype() == DType::f32)
    throw std::logic_error("rope_backward_rounded: out must be a 16-bit type (fp32: rope_backward in place)");
  detail::with_store(out, [&]<class Store>(typename Store::type* y) {
    backward_rounded<Store>(y, dx, cos, sin, B, T, heads, kv_heads, D, row_stride);
  });
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
