#pragma once
// Internal to flash_attention_bf16.cpp: its tile products on the AMX tile unit, and a scalar model
// of the same instructions that runs anywhere (tests).
//
// An AMX tile register holds up to 16 rows of 64 bytes. tdpbf16ps C, A, B adds to each fp32 C[m][n]
// (16 x 16) the sum over k < 16 of A word (m, k) . B word (k, n), where a word is two bf16 values
// (attention_bf16_tiles.h) and "." is lo*lo + hi*hi with fp32 accumulation: A is 16 rows of 16
// words (the reduced dimension along a row), B 16 rows of 16 words (the reduced dimension down the
// rows, paired) - the rows and pairR/pairT layouts the vector products read already. One
// instruction is 8192 multiply-adds, where vdpbf16ps is 32.
//
// Tiles used here: 0-3 the fp32 accumulators of a 16 x 64 output block, 4 and 5 the A operand and
// its remainder (an fp32 operand carried as hi + lo bf16 terms), 6 the B operand.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/isa_tier.h"

namespace ff::attn16 {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

constexpr int kTileRows = 16;   // rows of a tile register, and output rows of a block
constexpr int kTileWords = 16;  // 64-byte rows: 16 words of the reduced dimension, or 16 fp32 outputs

// ldtilecfg's 64-byte operand (palette 1): every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) bytes_per_row[t] = 64, rows[t] = kTileRows;
  }
};

#if defined(__x86_64__)
// The hardware, through the instructions themselves (GNU as knows them whatever -march says; the
// tile registers are invisible to the compiler, and volatile asm keeps the order written). The
// caller owns the tile state between configure() and release() on its thread. Only where
// attention_tiles() says AMX: elsewhere the first of them is an illegal instruction.
struct AmxTiles {
  void configure() {
    static_assert(sizeof(TileConfig) == 64);
    const TileConfig cfg;
    asm volatile("ldtilecfg %0" ::"m"(cfg));
  }
  void release() { asm volatile("tilerelease" ::); }
  template <int T>
  void zero() {
    asm volatile("tilezero %%tmm%c0" ::"i"(T));
  }
  template <int T>
  void load(const void* p, long stride_bytes) {
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"(stride_bytes), "i"(T) : "memory");
  }
  template <int T>
  void store(void* p, long stride_bytes) {
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"(stride_bytes), "i"(T) : "memory");
  }
  template <int C, int A, int B>
  void dot() {
    asm volatile("tdpbf16ps %%tmm%c0, %%tmm%c1, %%tmm%c2" ::"i"(B), "i"(A), "i"(C));
  }
};
#endif

// The same instructions on plain memory, as Intel's manual writes them: two fused multiply-adds
// per word pair in k order (lo, then hi), bf16 inputs widened exactly, denormal inputs read as zero
// and denormal results flushed to zero. The hardware adds in its own order: on an Emerald Rapids
// Xeon 162 of 1024 outputs of a 193-term block product had the model's bits, and none of four
// simple orders matched them all; every output was within 9.2 fp32 roundings of the terms'
// magnitude (CTest test_kernels, AmxTiles.*). So the model checks the blocking and the layouts,
// not the last bit of a sum.
struct EmulatedTiles {
  uint32_t reg[8][kTileRows][kTileWords];

  void configure() {}
  void release() {}
  template <int T>
  void zero() {
    std::memset(reg[T], 0, sizeof reg[T]);
  }
  template <int T>
  void load(const void* p, long stride_bytes) {
    for (int r = 0; r < kTileRows; ++r)
      std::memcpy(reg[T][r], static_cast<const char*>(p) + r * stride_bytes, sizeof reg[T][r]);
  }
  template <int T>
  void store(void* p, long stride_bytes) {
    for (int r = 0; r < kTileRows; ++r)
      std::memcpy(static_cast<char*>(p) + r * stride_bytes, reg[T][r], sizeof reg[T][r]);
  }
  template <int C, int A, int B>
  void dot() {
    for (int m = 0; m < kTileRows; ++m)
      for (int n = 0; n < kTileWords; ++n) {
        float acc = std::bit_cast<float>(reg[C][m][n]);
        for (int k = 0; k < kTileWords; ++k) {
          const uint32_t a = reg[A][m][k], b = reg[B][k][n];
          acc = flush(std::fma(widen(a & 0xffffu), widen(b & 0xffffu), acc));
          acc = flush(std::fma(widen(a >> 16), widen(b >> 16), acc));
        }
        reg[C][m][n] = std::bit_cast<uint32_t>(acc);
      }
  }

 private:
  static float widen(uint32_t half) {  // bf16 bits to fp32, denormals as zero
    const uint32_t u = half << 16;
    return (u & 0x7f800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : std::bit_cast<float>(u);
  }
  static float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
};

// Out (16 rows x 16 NC fp32, row stride ldo floats) (+)= A . B over `steps` k-steps of 16 words:
// A (16 rows, lda words apart; A2 the same positions of the remainder, or null), B (16 word rows
// per step, ldb words apart, 16 NC columns).
template <class Tiles, int NC>
inline void tile_block(Tiles& t, float* Out, int ldo, const uint32_t* A, const uint32_t* A2, int lda,
                       const uint32_t* B, int ldb, int steps, bool accumulate) {
  const long so = long(ldo) * 4, sa = long(lda) * 4, sb = long(ldb) * 4;
  if (accumulate) {
    t.template load<0>(Out, so);
    if constexpr (NC > 1) t.template load<1>(Out + 16, so);
    if constexpr (NC > 2) t.template load<2>(Out + 32, so);
    if constexpr (NC > 3) t.template load<3>(Out + 48, so);
  } else {
    t.template zero<0>();
    if constexpr (NC > 1) t.template zero<1>();
    if constexpr (NC > 2) t.template zero<2>();
    if constexpr (NC > 3) t.template zero<3>();
  }
  for (int s = 0; s < steps; ++s) {
    const uint32_t* b = B + size_t(s) * kTileRows * ldb;
    t.template load<4>(A + s * kTileWords, sa);
    if (A2) t.template load<5>(A2 + s * kTileWords, sa);
    // One B tile per 16 columns, multiplied by A (and the remainder) while it is loaded.
    auto column = [&](auto j) {
      constexpr int J = decltype(j)::value;
      t.template load<6>(b + J * kTileWords, sb);
      t.template dot<J, 4, 6>();
      if (A2) t.template dot<J, 5, 6>();
    };
    column(std::integral_constant<int, 0>{});
    if constexpr (NC > 1) column(std::integral_constant<int, 1>{});
    if constexpr (NC > 2) column(std::integral_constant<int, 2>{});
    if constexpr (NC > 3) column(std::integral_constant<int, 3>{});
  }
  t.template store<0>(Out, so);
  if constexpr (NC > 1) t.template store<1>(Out + 16, so);
  if constexpr (NC > 2) t.template store<2>(Out + 32, so);
  if constexpr (NC > 3) t.template store<3>(Out + 48, so);
}

// One 16-row block over `width` output columns (a multiple of 16), 64 at a time.
template <class Tiles>
inline void tile_rows(Tiles& t, float* Out, int ldo, const uint32_t* A, const uint32_t* A2, int lda,
                      const uint32_t* B, int ldb, int width, int steps, bool accumulate) {
  if (steps <= 0 && accumulate) return;
  for (int c0 = 0; c0 < width; c0 += 4 * kTileWords) {
    float* o = Out + c0;
    const uint32_t* b = B + c0;
    switch ((width - c0) / kTileWords) {
      case 1: tile_block<Tiles, 1>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      case 2: tile_block<Tiles, 2>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      case 3: tile_block<Tiles, 3>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      default: tile_block<Tiles, 4>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn16
