#include "kernels/fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace ff {

namespace {

// Enough independent accumulators to cover the FMA latency times the FMA ports (4 cycles x 2
// ports on current x86 cores); each burst does kIters rounds of all of them.
constexpr int kAcc = 12;
constexpr long kIters = 20000;

__attribute__((target("avx512f"))) double burst_avx512() {
  __m512 acc[kAcc];
#pragma GCC unroll 32
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < kIters; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  float out[16];  // summed by hand: GCC 12's _mm512_reduce_add_ps warns from its own header
  __m512 s = acc[0];
#pragma GCC unroll 32
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(out, s);
  double sum = 0;
  for (float x : out) sum += x;
  return sum;
}

__attribute__((target("avx2,fma"))) double burst_avx2() {
  __m256 acc[kAcc];
#pragma GCC unroll 32
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(0.001f * float(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < kIters; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float out[8];
  __m256 s = acc[0];
#pragma GCC unroll 32
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  double r = 0;
  for (float x : out) r += x;
  return r;
}

double burst_scalar() {
  float acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.001f * float(i);
  for (long it = 0; it < kIters; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < kAcc; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
  }
  double r = 0;
  for (float x : acc) r += x;
  return r;
}

}  // namespace

FmaPeak measure_fma_peak() {
  FmaPeak p;
  double (*burst)() = burst_scalar;
  int lanes = 1;
  p.isa = "scalar";
  if (__builtin_cpu_supports("avx512f")) burst = burst_avx512, lanes = 16, p.isa = "avx512";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) burst = burst_avx2, lanes = 8, p.isa = "avx2+fma";
  const double flops = 2.0 * lanes * kAcc * double(kIters);
  p.flops_per_core = flops / best_burst_seconds(burst, 0.2);
  return p;
}

double best_burst_seconds(double (*burst)(), double budget_s) {
  volatile double sink = 0;
  double best = 1e30, spent = 0;
  using clock = std::chrono::steady_clock;
  for (int rep = 0; rep < 400 && (rep < 20 || spent < budget_s); ++rep) {
    const auto t0 = clock::now();
    sink = sink + burst();
    const double t = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, t), spent += t;
  }
  return best;
}

}  // namespace ff
