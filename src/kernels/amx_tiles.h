#pragma once
// The AMX tile unit, for fivefold's own kernels that multiply bf16 matrices on it (the bf16
// attention's tile products, attention_amx.h; the tile GEMM, gemm_amx.h): the instructions
// themselves, and a scalar model of the same instructions that runs anywhere (tests).
//
// An AMX tile register holds up to 16 rows of 64 bytes. tdpbf16ps C, A, B adds to each fp32 C[m][n]
// (16 x 16) the sum over k < 16 of A word (m, k) . B word (k, n), where a word is two bf16 values,
// the lower-addressed one in the low half, and "." is lo*lo + hi*hi with fp32 accumulation: A is 16
// rows of 16 words (the reduced dimension along a row, two values per word), B 16 rows of 16 words
// (the reduced dimension down the rows, in pairs: word (k, n) holds rows 2k and 2k + 1 of column
// n). One instruction is 8192 multiply-adds, where vdpbf16ps is 32. Every tile here is configured
// 16 rows of 64 bytes.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/isa_tier.h"

namespace ff::amx {
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
// caller owns the tile state between configure() and release() on its thread. Only where the
// process may use AMX (attention_tiles(), gemm_tiles(): cpu_isa.h): elsewhere the first of them is
// an illegal instruction.
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
  // The 1 KiB of a packed tile at p into L1 ahead of its load (a tile load waits some 45 cycles
  // on L1, longer on L2, while a product takes 16).
  void prefetch(const void* p) {
    for (int line = 0; line < 16; ++line) __builtin_prefetch(static_cast<const char*>(p) + 64 * line, 0, 3);
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
  void prefetch(const void*) {}
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

}  // namespace FF_ISA_TAG
}  // namespace ff::amx
