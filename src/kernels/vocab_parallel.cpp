#include "kernels/vocab_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/simd.h"

namespace ff {

namespace {
bool holds(int token, int first, int count) { return token >= first && token < first + count; }
}  // namespace

FF_WIDE void vocab_slice_row_max(const float* logits, float* row_max, int N, int Vl) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* x = logits + size_t(n) * Vl;
    float m = x[0];
#pragma omp simd reduction(max : m)
    for (int c = 0; c < Vl; ++c) m = x[c] > m ? x[c] : m;
    row_max[n] = m;
  }
}

FF_WIDE void vocab_slice_partials(float* logits, const float* row_max, const int32_t* targets,
                                  int N, int Vl, int first, bool keep_exp, float* partials) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* x = logits + size_t(n) * Vl;
    const float m = row_max[n];
    partials[N + n] = holds(targets[n], first, Vl) ? x[targets[n] - first] : 0.0f;
    float sum = 0;
    if (keep_exp) {
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < Vl; ++c) {
        const float e = simd::exp_fast(x[c] - m);
        x[c] = e;
        sum += e;
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < Vl; ++c) sum += simd::exp_fast(x[c] - m);
    }
    partials[n] = sum;
  }
}

FF_WIDE double vocab_slice_finish(float* logits, const float* row_max, const float* partials,
                                  const int32_t* targets, int N, int Vl, int first, bool exps,
                                  float grad_scale, float* losses) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* x = logits + size_t(n) * Vl;
    if (targets[n] == kIgnoredTarget) {
      losses[n] = 0;
      if (exps) std::fill(x, x + Vl, 0.0f);
      continue;
    }
    const float sum = partials[n];
    losses[n] = std::log(sum) + (row_max[n] - partials[N + n]);
    if (!exps) continue;
    const float k = grad_scale / sum;
#pragma omp simd
    for (int c = 0; c < Vl; ++c) x[c] *= k;
    if (holds(targets[n], first, Vl)) x[targets[n] - first] -= grad_scale;
  }
  double total = 0;
  for (int n = 0; n < N; ++n) total += double(losses[n]);
  return total;
}

}  // namespace ff
