#include "kernels/adamw.h"

#include <algorithm>
#include <cmath>

namespace ff {
namespace {

// l2_norm sums fixed-size chunks, then the chunk partials in order: the chunking depends on n
// only, so the norm is bitwise identical for every thread count.
constexpr size_t kMaxChunks = 1024;
constexpr size_t kMinChunk = 1 << 14;

}  // namespace

// Mirrors torch.optim.AdamW (1.13, single-tensor path) operation by operation: the scalar
// factors are formed in double as Python does, each tensor op rounds to float.
//
// The fused multiply-adds are written out: they are the three contractions GCC made in the scalar
// loop this replaces (m and v's updates, the final subtraction), so the results stay bitwise those
// of every earlier build. The file compiles with -fno-math-errno (CMakeLists.txt): with errno, GCC
// keeps std::sqrt scalar and the whole loop with it, and the loop is the step's largest pass over
// memory (p, g, m, v in, p, m, v out). Rounding is IEEE in either form, so only the speed changes.
void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                  const AdamWHyper& h, bool decay) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), h.step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), h.step);
  const float shrink =
      decay ? static_cast<float>(1.0 - static_cast<double>(h.lr) * h.weight_decay) : 1.0f;
  const float b1 = h.beta1, b2 = h.beta2;
  const float one_minus_b1 = static_cast<float>(1.0 - h.beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - h.beta2);
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float eps = h.eps;
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

double l2_norm(const float* x, size_t n) {
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

void scale_inplace(float* x, size_t n, float s) {
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) x[i] *= s;
}

}  // namespace ff
