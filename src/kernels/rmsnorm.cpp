#include "kernels/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/round_store.h"
#include "kernels/tier_pick.h"

namespace ff {

// The fp32 kernels of one ISA tier: this file compiled for the build's target, and again by
// tiers/rmsnorm_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct RmsNormTier {
  void (*forward)(TypedPtr y, float* rstd, const float* x, const float* w, int N, int C, float eps);
  void (*backward)(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                   int N, int C);
  void (*backward_rounded)(float* dx, TypedPtr dx_rounded, float* dw, const float* dy, const float* x,
                           const float* w, const float* rstd, int N, int C);
};

namespace FF_ISA_TAG {
namespace {

// dw is reduced over rows. Splitting it by column blocks, each summing its rows in order, makes
// the result independent of the thread count (a serial run and a 1-thread-per-rank run agree
// bitwise) without per-thread partial buffers.
constexpr int kColBlock = 64;

// y in T, or in a 16-bit type through Store (round_store.h): the same fp32 arithmetic either way.
template <class T, class Store = detail::StoreSame<T>>
void forward(typename Store::type* y, T* rstd, const T* x, const T* w, int N, int C, T eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<size_t>(n) * C;
    typename Store::type* yr = y + static_cast<size_t>(n) * C;
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; ++c) ss += xr[c] * xr[c];
    const T r = T(1) / std::sqrt(ss / T(C) + eps);
    rstd[n] = r;
    // Same rounding order as HF: (x * rstd) first, then the weight.
#pragma omp simd
    for (int c = 0; c < C; ++c) yr[c] = Store::cast((xr[c] * r) * w[c]);
  }
}

// y_j = w_j x_j r with r = (mean(x^2) + eps)^-1/2, so
// dx_j = r w_j dy_j - x_j (r^3 / C) sum_i dy_i w_i x_i  and  dw_j = sum_rows dy_j x_j r.
// Copy: also store each row of the updated dx through it into dx_copy (a 16-bit copy); void: none.
template <class T, class Copy = void>
void backward(T* dx, T* dw, const T* dy, const T* x, const T* w, const T* rstd, int N, int C,
              [[maybe_unused]] void* dx_copy = nullptr) {
  const int blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; ++n) {
      const size_t off = static_cast<size_t>(n) * C;
      const T* xr = x + off;
      const T* dyr = dy + off;
      T* dxr = dx + off;
      const T r = rstd[n];
      T dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int c = 0; c < C; ++c) dot += dyr[c] * w[c] * xr[c];
      const T k = r * r * r * dot / T(C);
#pragma omp simd
      for (int c = 0; c < C; ++c) dxr[c] += r * w[c] * dyr[c] - k * xr[c];
      if constexpr (!std::is_void_v<Copy>) {
        typename Copy::type* cr = static_cast<typename Copy::type*>(dx_copy) + off;
#pragma omp simd
        for (int c = 0; c < C; ++c) cr[c] = Copy::cast(dxr[c]);  // the row is still in L1
      }
    }
#pragma omp for schedule(static)
    for (int blk = 0; blk < blocks; ++blk) {
      const int c0 = blk * kColBlock;
      const int nc = std::min(kColBlock, C - c0);
      T acc[kColBlock] = {};
      for (int n = 0; n < N; ++n) {
        const size_t off = static_cast<size_t>(n) * C + c0;
        const T r = rstd[n];
#pragma omp simd
        for (int c = 0; c < nc; ++c) acc[c] += dy[off + c] * (x[off + c] * r);
      }
      for (int c = 0; c < nc; ++c) dw[c0 + c] += acc[c];
    }
  }
}

void norm_forward(TypedPtr y, float* rstd, const float* x, const float* w, int N, int C, float eps) {
  detail::with_store(y, [&]<class Store>(typename Store::type* out) {
    forward<float, Store>(out, rstd, x, w, N, C, eps);
  });
}
void norm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd, int N,
                   int C) {
  backward(dx, dw, dy, x, w, rstd, N, C);
}
void norm_backward_rounded(float* dx, TypedPtr dx_rounded, float* dw, const float* dy, const float* x,
                           const float* w, const float* rstd, int N, int C) {
  detail::with_store(dx_rounded, [&]<class Store>(typename Store::type*) {
    if constexpr (!std::is_same_v<Store, detail::StoreF32>)
      backward<float, Store>(dx, dw, dy, x, w, rstd, N, C, dx_rounded.data());
  });
}

}  // namespace

extern const RmsNormTier rmsnorm_tier;
const RmsNormTier rmsnorm_tier = {&norm_forward, &norm_backward, &norm_backward_rounded};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(RmsNormTier, rmsnorm_tier)

void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int N, int C,
                     float eps) {
  rmsnorm_tier_for_cpu().forward(TypedPtr(y), rstd, x, w, N, C, eps);
}
void rmsnorm_forward(TypedPtr y, float* rstd, const float* x, const float* w, int N, int C, float eps) {
  rmsnorm_tier_for_cpu().forward(y, rstd, x, w, N, C, eps);
}
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int N, int C) {
  rmsnorm_tier_for_cpu().backward(dx, dw, dy, x, w, rstd, N, C);
}
void rmsnorm_backward(float* dx, TypedPtr dx_rounded, float* dw, const float* dy, const float* x,
                      const float* w, const float* rstd, int N, int C) {
  if (dx_rounded.dtype() == DType::f32)
    throw std::logic_error("rmsnorm_backward: the rounded copy of dx must be 16-bit");
  rmsnorm_tier_for_cpu().backward_rounded(dx, dx_rounded, dw, dy, x, w, rstd, N, C);
}
void rmsnorm_forward(double* y, double* rstd, const double* x, const double* w, int N, int C,
                     double eps) {
  FF_ISA_TAG::forward(y, rstd, x, w, N, C, eps);
}
void rmsnorm_backward(double* dx, double* dw, const double* dy, const double* x, const double* w,
                      const double* rstd, int N, int C) {
  FF_ISA_TAG::backward(dx, dw, dy, x, w, rstd, N, C);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
