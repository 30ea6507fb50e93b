#include "kernels/adamw.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/tier_pick.h"

namespace ff {

// AdamW's per-step scalars, rounded to float as PyTorch's tensor ops use them.
struct AdamWFactors {
  float shrink, b1, b2, one_minus_b1, one_minus_b2, step_size, bc2_sqrt, eps;
};

// The loops of one ISA tier: this file compiled for the build's target, and again by
// tiers/adamw_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct AdamWTier {
  void (*update)(float* param, const float* grad, float* m, float* v, size_t n, const AdamWFactors& f);
  double (*l2_norm)(const float* x, size_t n);
  void (*scale)(float* x, size_t n, float s);
};

namespace FF_ISA_TAG {
namespace {

// l2_norm sums fixed-size chunks, then the chunk partials in order: the chunking depends on n
// only, so the norm is bitwise identical for every thread count.
constexpr size_t kMaxChunks = 1024;
constexpr size_t kMinChunk = 1 << 14;

// The fused multiply-adds are written out: they are the three contractions GCC made in the scalar
// loop this replaces (m and v's updates, the final subtraction), so the results stay bitwise those
// of every earlier build. The file compiles with -fno-math-errno (CMakeLists.txt): with errno, GCC
// keeps std::sqrt scalar and the whole loop with it, and the loop is the step's largest pass over
// memory (p, g, m, v in, p, m, v out). Rounding is IEEE in either form, so only the speed changes.
void adamw_loop(float* param, const float* grad, float* m, float* v, size_t n, const AdamWFactors& f) {
  const float shrink = f.shrink, b1 = f.b1, b2 = f.b2, one_minus_b1 = f.one_minus_b1;
  const float one_minus_b2 = f.one_minus_b2, step_size = f.step_size, bc2_sqrt = f.bc2_sqrt, eps = f.eps;
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) {
    const float g = grad[i];
    const float p = param[i] * shrink;
    const float mi = std::fma(m[i], b1, one_minus_b1 * g);
    const float vi = std::fma(v[i], b2, (one_minus_b2 * g) * g);
    const float denom = std::sqrt(vi) / bc2_sqrt + eps;
    m[i] = mi;
    v[i] = vi;
    param[i] = std::fma(-(mi / denom), step_size, p);
  }
}

double norm_by_chunks(const float* x, size_t n) {
  if (n == 0) return 0.0;
  const size_t chunk = std::max(kMinChunk, (n + kMaxChunks - 1) / kMaxChunks);
  const long long chunks = static_cast<long long>((n + chunk - 1) / chunk);
  double partial[kMaxChunks];
#pragma omp parallel for schedule(static)
  for (long long c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * chunk;
    const size_t end = std::min(n, begin + chunk);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = begin; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[c] = s;
  }
  double total = 0;
  for (long long c = 0; c < chunks; ++c) total += partial[c];
  return std::sqrt(total);
}

void scale_loop(float* x, size_t n, float s) {
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) x[i] *= s;
}

}  // namespace

extern const AdamWTier adamw_tier;
const AdamWTier adamw_tier = {&adamw_loop, &norm_by_chunks, &scale_loop};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(AdamWTier, adamw_tier)

// Mirrors torch.optim.AdamW (1.13, single-tensor path) operation by operation: the scalar
// factors are formed in double as Python does, each tensor op rounds to float.
void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                  const AdamWHyper& h, bool decay) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), h.step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), h.step);
  AdamWFactors f;
  f.shrink = decay ? static_cast<float>(1.0 - static_cast<double>(h.lr) * h.weight_decay) : 1.0f;
  f.b1 = h.beta1, f.b2 = h.beta2;
  f.one_minus_b1 = static_cast<float>(1.0 - h.beta1);
  f.one_minus_b2 = static_cast<float>(1.0 - h.beta2);
  f.step_size = static_cast<float>(h.lr / bc1);
  f.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  f.eps = h.eps;
  adamw_tier_for_cpu().update(param, grad, m, v, n, f);
}

double l2_norm(const float* x, size_t n) { return adamw_tier_for_cpu().l2_norm(x, n); }

void scale_inplace(float* x, size_t n, float s) { adamw_tier_for_cpu().scale(x, n, s); }

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
