#include "kernels/bf16_peak.h"

#include <immintrin.h>

#include "kernels/cpu_isa.h"
#include "kernels/fma_peak.h"

namespace ff {

namespace {

constexpr int kAcc = 12;  // independent accumulators: the dot product's latency x its ports
constexpr long kIters = 20000;

__attribute__((target("avx512f,avx512bf16"))) double burst() {
  __m512 acc[kAcc];
#pragma GCC unroll 32
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  // Small bf16 pairs (0x3c00 ~ 0.0078) keep the sums finite over every iteration.
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3c003c00), b = a;
  for (long it = 0; it < kIters; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
#pragma GCC unroll 32
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  double r = 0;
  for (float x : out) r += x;
  return r;
}

}  // namespace

double measure_bf16_dot_peak() {
  if (!__builtin_cpu_supports("avx512f") || bf16_path() == Bf16Path::emulated) return 0;
  const double flops = 4.0 * 16 * kAcc * double(kIters);  // 16 lanes, 2 products + 2 adds each
  return flops / best_burst_seconds(burst, 0.1);
}

}  // namespace ff
