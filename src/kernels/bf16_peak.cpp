#include "kernels/bf16_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "kernels/amx_tiles.h"
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

constexpr long kTileDots = 4000;  // 4 x 16 cycles each on Sapphire Rapids: ~0.1 ms a burst

double tile_burst() {
#if defined(__x86_64__)
  amx::AmxTiles t;
  t.configure();
  alignas(64) uint32_t operand[amx::kTileRows * amx::kTileWords];
  std::fill(std::begin(operand), std::end(operand), 0x3c003c00u);  // small bf16 pairs: sums stay finite
  t.load<4>(operand, 64), t.load<5>(operand, 64), t.load<6>(operand, 64), t.load<7>(operand, 64);
  t.zero<0>(), t.zero<1>(), t.zero<2>(), t.zero<3>();
  for (long i = 0; i < kTileDots / 4; ++i) t.dot<0, 4, 6>(), t.dot<1, 4, 7>(), t.dot<2, 5, 6>(), t.dot<3, 5, 7>();
  alignas(64) float out[amx::kTileRows * amx::kTileWords];
  t.store<0>(out, 64);  // a result the loop must produce
  t.release();
  return out[0];
#else
  return 0;
#endif
}

}  // namespace

double measure_amx_bf16_peak() {
  if (!amx_tile_unit_usable()) return 0;
  const double flops = 2.0 * amx::kTileRows * amx::kTileWords * 32 * double(kTileDots);
  return flops / best_burst_seconds(tile_burst, 0.1);
}

double measure_bf16_gemm_peak() {
  if (bf16_path() == Bf16Path::amx)
    if (const double tiles = measure_amx_bf16_peak(); tiles > 0) return tiles;
  return measure_bf16_dot_peak();
}

double measure_bf16_dot_peak() {
  if (!__builtin_cpu_supports("avx512f") || bf16_path() == Bf16Path::emulated) return 0;
  const double flops = 4.0 * 16 * kAcc * double(kIters);  // 16 lanes, 2 products + 2 adds each
  return flops / best_burst_seconds(burst, 0.1);
}

}  // namespace ff
