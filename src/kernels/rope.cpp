#include "kernels/rope.h"

#include <cmath>
#include <cstddef>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/rope_row.h"
#include "kernels/round_store.h"
#include "kernels/tier_pick.h"

namespace ff {

// The fp32 rotations of one ISA tier: this file compiled for the build's target, and again by
// tiers/rope_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct RopeTier {
  void (*forward)(float* x, const float* cos, const float* sin, int B, int T, int heads, int D, int row_stride);
  void (*backward)(float* dx, const float* cos, const float* sin, int B, int T, int heads, int D, int row_stride);
  void (*backward_rounded)(TypedPtr out, const float* dx, const float* cos, const float* sin, int B, int T,
                           int heads, int kv_heads, int D, int row_stride);
};

namespace {

// Follows HF's rotary embedding in the kernel's precision: inv_freq = 1 / theta^(2i/D), then the
// scaling (transformers' _compute_linear_scaling_rope_parameters and _compute_llama3_parameters),
// angle = t * inv_freq, each rounded to T, so the float tables match PyTorch's float32 ones.
template <class T>
void inverse_frequencies(T* inv_freq, int D, T theta, const RopeScaling& s) {
  const T factor = T(s.factor), low = T(s.low_freq_factor), high = T(s.high_freq_factor);
  const T context = T(s.original_context);
  for (int i = 0; i < D / 2; ++i) {
    T f = T(1) / std::pow(theta, T(2 * i) / T(D));
    if (s.kind == RopeScalingKind::linear) f = f / factor;
    if (s.kind == RopeScalingKind::llama3) {
      const T wavelength = T(2) * std::numbers::pi_v<T> / f;
      if (wavelength > context / low) {
        f = f / factor;  // a long wavelength: interpolated as linear scaling does
      } else if (!(wavelength < context / high)) {
        const T smooth = (context / wavelength - low) / (high - low);
        f = (T(1) - smooth) * f / factor + smooth * f;
      }
    }
    inv_freq[i] = f;
  }
}

template <class T>
void tables(T* cos, T* sin, int Tn, int D, T theta, const RopeScaling& s) {
  const int half = D / 2;
  std::vector<T> inv_freq(static_cast<size_t>(half));
  inverse_frequencies(inv_freq.data(), D, theta, s);
  for (int t = 0; t < Tn; ++t) {
    for (int i = 0; i < half; ++i) {
      const T angle = T(t) * inv_freq[static_cast<size_t>(i)];
      cos[static_cast<size_t>(t) * half + i] = std::cos(angle);
      sin[static_cast<size_t>(t) * half + i] = std::sin(angle);
    }
  }
}

}  // namespace

namespace FF_ISA_TAG {
namespace {

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

void rotate_forward(float* x, const float* cos, const float* sin, int B, int Tn, int heads, int D, int row_stride) {
  rotate(x, cos, sin, B, Tn, heads, D, row_stride, 1.0f);
}
void rotate_backward(float* dx, const float* cos, const float* sin, int B, int Tn, int heads, int D, int row_stride) {
  rotate(dx, cos, sin, B, Tn, heads, D, row_stride, -1.0f);
}
void rotate_back_rounded(TypedPtr out, const float* dx, const float* cos, const float* sin, int B, int Tn, int heads,
                         int kv_heads, int D, int row_stride) {
  detail::with_store(out, [&]<class Store>(typename Store::type* y) {
    backward_rounded<Store>(y, dx, cos, sin, B, Tn, heads, kv_heads, D, row_stride);
  });
}

}  // namespace

extern const RopeTier rope_tier;
const RopeTier rope_tier = {&rotate_forward, &rotate_backward, &rotate_back_rounded};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(RopeTier, rope_tier)

void rope_inverse_frequencies(float* inv_freq, int D, float theta, const RopeScaling& scaling) {
  inverse_frequencies(inv_freq, D, theta, scaling);
}
void rope_inverse_frequencies(double* inv_freq, int D, double theta, const RopeScaling& scaling) {
  inverse_frequencies(inv_freq, D, theta, scaling);
}
void rope_tables(float* cos, float* sin, int T, int D, float theta, const RopeScaling& scaling) {
  tables(cos, sin, T, D, theta, scaling);
}
void rope_forward(float* x, const float* cos, const float* sin, int B, int T, int heads, int D,
                  int row_stride) {
  rope_tier_for_cpu().forward(x, cos, sin, B, T, heads, D, row_stride);
}
void rope_backward(float* dx, const float* cos, const float* sin, int B, int T, int heads, int D,
                   int row_stride) {
  rope_tier_for_cpu().backward(dx, cos, sin, B, T, heads, D, row_stride);
}
void rope_backward_rounded(TypedPtr out, const float* dx, const float* cos, const float* sin, int B, int T,
                           int heads, int kv_heads, int D, int row_stride) {
  if (out.dtype() == DType::f32)
    throw std::logic_error("rope_backward_rounded: out must be a 16-bit type (fp32: rope_backward in place)");
  rope_tier_for_cpu().backward_rounded(out, dx, cos, sin, B, T, heads, kv_heads, D, row_stride);
}
void rope_tables(double* cos, double* sin, int T, int D, double theta, const RopeScaling& scaling) {
  tables(cos, sin, T, D, theta, scaling);
}
void rope_forward(double* x, const double* cos, const double* sin, int B, int T, int heads, int D,
                  int row_stride) {
  FF_ISA_TAG::rotate(x, cos, sin, B, T, heads, D, row_stride, 1.0);
}
void rope_backward(double* dx, const double* cos, const double* sin, int B, int T, int heads, int D,
                   int row_stride) {
  FF_ISA_TAG::rotate(dx, cos, sin, B, T, heads, D, row_stride, -1.0);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
