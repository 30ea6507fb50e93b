#include "kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/simd.h"
#include "kernels/tier_pick.h"

namespace ff {

// The fp32 loss of one ISA tier: this file compiled for the build's target, and again by
// tiers/cross_entropy_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct CrossEntropyTier {
  double (*forward_backward)(float* logits, float* losses, const int32_t* targets, int N, int V, float grad_scale,
                             TypedPtr grad_rounded);
  double (*forward)(const float* logits, float* losses, const int32_t* targets, int N, int V);
};

namespace FF_ISA_TAG {
namespace {

template <class T>
FF_WIDE T row_max(const T* x, int V) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int c = 0; c < V; ++c) m = x[c] > m ? x[c] : m;
  return m;
}

// One row converted on this thread (convert_from_f32 would open a parallel region for a long row),
// in chunks that stay in L1.
void convert_row(TypedPtr dst, const float* x, int V) {
  constexpr int kChunk = 4096;
  for (int c = 0; c < V; c += kChunk)
    convert_from_f32(dst.at(size_t(c)), x + c, size_t(std::min(kChunk, V - c)));
}

// The per-row losses are summed serially in row order after the parallel loop, so the total is
// the same for any thread count.
template <class T>
double sum_rows(const T* losses, int N) {
  double total = 0;
  for (int n = 0; n < N; ++n) total += static_cast<double>(losses[n]);
  return total;
}

// rounded: each finished gradient row is also converted into its row there (null: not).
template <class T>
FF_WIDE double forward_backward(T* logits, T* losses, const int32_t* targets, int N, int V, T scale,
                                TypedPtr rounded = TypedPtr()) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    T* x = logits + static_cast<size_t>(n) * V;
    if (targets[n] == kIgnoredTarget) {
      losses[n] = 0;
      std::fill(x, x + V, T(0));
      if constexpr (std::is_same_v<T, float>)
        if (rounded) convert_row(rounded.at(static_cast<size_t>(n) * V), x, V);
      continue;
    }
    const T m = row_max(x, V);
    const T target_logit = x[targets[n]];
    // One exp per logit: the shifted exponentials are parked in the row and rescaled by
    // scale / sum afterwards to become the gradient.
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < V; ++c) {
      const T e = simd::exp_fast(x[c] - m);
      x[c] = e;
      sum += e;
    }
    // m - target first: exact for nearby values, so large logits lose no precision.
    losses[n] = std::log(sum) + (m - target_logit);
    const T k = scale / sum;
#pragma omp simd
    for (int c = 0; c < V; ++c) x[c] *= k;
    x[targets[n]] -= scale;
    if constexpr (std::is_same_v<T, float>)
      if (rounded) convert_row(rounded.at(static_cast<size_t>(n) * V), x, V);
  }
  return sum_rows(losses, N);
}

template <class T>
FF_WIDE double forward_only(const T* logits, T* losses, const int32_t* targets, int N, int V) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<size_t>(n) * V;
    if (targets[n] == kIgnoredTarget) {
      losses[n] = 0;
      continue;
    }
    const T m = row_max(x, V);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < V; ++c) sum += simd::exp_fast(x[c] - m);
    losses[n] = std::log(sum) + (m - x[targets[n]]);
  }
  return sum_rows(losses, N);
}

double loss_forward_backward(float* logits, float* losses, const int32_t* targets, int N, int V, float grad_scale,
                             TypedPtr grad_rounded) {
  return forward_backward(logits, losses, targets, N, V, grad_scale, grad_rounded);
}
double loss_forward(const float* logits, float* losses, const int32_t* targets, int N, int V) {
  return forward_only(logits, losses, targets, N, V);
}

}  // namespace

extern const CrossEntropyTier cross_entropy_tier;
const CrossEntropyTier cross_entropy_tier = {&loss_forward_backward, &loss_forward};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(CrossEntropyTier, cross_entropy_tier)

double cross_entropy_forward_backward(float* logits, float* losses, const int32_t* targets, int N,
                                      int V, float grad_scale) {
  return cross_entropy_tier_for_cpu().forward_backward(logits, losses, targets, N, V, grad_scale, TypedPtr());
}
double cross_entropy_forward_backward(float* logits, float* losses, const int32_t* targets, int N, int V,
                                      float grad_scale, TypedPtr grad_rounded) {
  return cross_entropy_tier_for_cpu().forward_backward(logits, losses, targets, N, V, grad_scale, grad_rounded);
}
double cross_entropy_forward(const float* logits, float* losses, const int32_t* targets, int N,
                             int V) {
  return cross_entropy_tier_for_cpu().forward(logits, losses, targets, N, V);
}
double cross_entropy_forward_backward(double* logits, double* losses, const int32_t* targets, int N,
                                      int V, double grad_scale) {
  return FF_ISA_TAG::forward_backward(logits, losses, targets, N, V, grad_scale);
}
double cross_entropy_forward(const double* logits, double* losses, const int32_t* targets, int N,
                             int V) {
  return FF_ISA_TAG::forward_only(logits, losses, targets, N, V);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
