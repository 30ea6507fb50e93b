#pragma once
// Internal to flash_attention_bf16.cpp: the bf16 tile products and the layouts they read.
//
// A "word" is two bf16 values packed in 32 bits, the lower-indexed one in the low half: the unit
// AVX512-BF16's vdpbf16ps consumes (lane j: acc[j] += a.lo[j] b.lo[j] + a.hi[j] b.hi[j], fp32
// accumulation). Every product below reduces over pairs: the A operand is one word broadcast
// (two consecutive entries of the reduced dimension), the B operand 16 words (the same two
// entries for 16 output columns). Three layouts feed that, for an (n x Dp) matrix M:
//   rows:  M row-major in bf16, (n, Dp): the words of a row pair its columns (A of Q K^T, dO V^T)
//   pairT: (Dp/2, n) words, word (p, t) = (M[t][2p], M[t][2p+1])     (B of Q K^T, dO V^T)
//   pairR: (n/2, Dp) words, word (p, d) = (M[2p][d], M[2p+1][d])     (B of P V, dS K, P^T dO, dS^T Q)
// Without AVX512-BF16 the pair is widened to fp32 and multiplied there: the same products
// (a bf16 x bf16 product is exact in fp32), only the rounding of the sums differs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/simd.h"

namespace ff::attn16 {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

using simd::kLanes;
using Word = uint32_t;
// Every loop here works in the build's register width (simd::Reg, kBlockVecs): on AVX2 a 64-byte
// 16-lane vector went through the stack (measured on a Zen 3: the products were a third of a
// bf16 step of the `bench` model, the rounding of q/k/v a sixth of the bf16 attention).
using RegF = simd::Reg<float>;
using RegW = simd::Reg<Word>;
constexpr int kRegLanes = simd::kRegLanes<float>;
using simd::kBlockVecs;
typedef uint16_t RegH __attribute__((vector_size(kRegLanes * sizeof(uint16_t))));  // a register's bf16

constexpr int kTile = 64;              // queries per tile and keys per tile
constexpr int kRows = 4;               // output rows per register block
constexpr int kDimAlign = 2 * kLanes;  // head dim padded so a row is a whole number of 16-word vectors

inline Word bits(float x) {
  Word u;
  std::memcpy(&u, &x, 4);
  return u;
}
// Words are read with memcpy: the rows layout is written as uint16_t, and memcpy is the read
// the aliasing rules allow (it compiles to the same broadcast load).
inline Word load_word(const Word* p) {
  Word w;
  std::memcpy(&w, p, 4);
  return w;
}
inline float from_bits(Word u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// bf16 bits (in the low half of each lane) of x, rounded to nearest even; NaN stays a quiet
// NaN. The same rule as f32_to_bf16 (core/dtype.h), on a register's lanes.
inline RegW round_bf16(const RegF& x) {
  RegW u;
  std::memcpy(&u, &x, sizeof u);
  const RegW rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const RegW quiet_nan = (u >> 16) | 0x40u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}
inline uint16_t round_bf16(float x) {
  const Word u = bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float to_f32(uint16_t x) { return from_bits(Word(x) << 16); }

// acc + a.lo b.lo + a.hi b.hi on every lane, a broadcast.
FF_WIDE inline RegF dot2(RegF acc, Word a, const RegW& b) {
#if FF_ISA_LEVEL >= 2  // AVX512-BF16 (isa_tier.h), so AVX-512: RegF is a 64-byte __m512
  const __m512i av = _mm512_set1_epi32(static_cast<int>(a));
  const __m512 r =
      _mm512_dpbf16_ps(reinterpret_cast<const __m512&>(acc), reinterpret_cast<const __m512bh&>(av),
                       reinterpret_cast<const __m512bh&>(b));
  return reinterpret_cast<const RegF&>(r);
#else
  RegF blo, bhi;
  const RegW ulo = b << 16, uhi = b & 0xffff0000u;
  std::memcpy(&blo, &ulo, sizeof blo);
  std::memcpy(&bhi, &uhi, sizeof bhi);
  return acc + from_bits(a << 16) * blo + from_bits(a & 0xffff0000u) * bhi;
#endif
}

// Out[r][0 : 16 NV) (+)= sum_{p0 <= p < p1} A(r, p) . B[p][0 : 16 NV) for kRows rows, where
// A(r, p) = A[r * ai + p * ak] is a word and B has ldb words per row. With A2 (same strides) the
// product is (A + A2) . B, B read once: an fp32 operand carried as two bf16 terms (hi + lo). The
// register block is kRows x NV accumulators, every loop over it unrolled so none goes through
// the stack.
template <int NV, bool kAccumulate, bool kTwo>
FF_WIDE inline void dot_block(float* Out, int ldo, const Word* A, const Word* A2, int ai, int ak,
                              const Word* B, int ldb, int p0, int p1) {
  constexpr int R = NV * kLanes / kRegLanes;  // registers per row
  RegF acc[kRows][R];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < R; ++v)
      acc[r][v] = kAccumulate ? simd::load_as<RegF>(Out + r * ldo + v * kRegLanes) : RegF{};
  for (int p = p0; p < p1; ++p) {
    RegW b[R];
#pragma GCC unroll 4
    for (int v = 0; v < R; ++v) b[v] = simd::load_as<RegW>(B + static_cast<size_t>(p) * ldb + v * kRegLanes);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const size_t at = r * ai + static_cast<size_t>(p) * ak;
      const Word a = load_word(A + at);
#pragma GCC unroll 4
      for (int v = 0; v < R; ++v) acc[r][v] = dot2(acc[r][v], a, b[v]);
      if constexpr (kTwo) {
        const Word a2 = load_word(A2 + at);
#pragma GCC unroll 4
        for (int v = 0; v < R; ++v) acc[r][v] = dot2(acc[r][v], a2, b[v]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < R; ++v) simd::store(Out + r * ldo + v * kRegLanes, acc[r][v]);
}

// One row block over `width` output columns (a multiple of 16), 64 at a time. A2: as dot_block
// (null: A alone).
template <bool kAccumulate>
FF_WIDE inline void dot_rows(float* Out, int ldo, const Word* A, const Word* A2, int ai, int ak,
                             const Word* B, int ldb, int width, int p0, int p1) {
  if (p0 >= p1 && kAccumulate) return;
  for (int c0 = 0; c0 < width; c0 += kBlockVecs * kLanes) {
    float* o = Out + c0;
    const Word* b = B + c0;
    const int nv = std::min(kBlockVecs, (width - c0) / kLanes);
    if (A2) {
      switch (nv) {
        case 1: dot_block<1, kAccumulate, true>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
        case 2: dot_block<2, kAccumulate, true>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
        case 3: dot_block<3, kAccumulate, true>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
        default: dot_block<4, kAccumulate, true>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
      }
      continue;
    }
    switch (nv) {
      case 1: dot_block<1, kAccumulate, false>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
      case 2: dot_block<2, kAccumulate, false>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
      case 3: dot_block<3, kAccumulate, false>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
      default: dot_block<4, kAccumulate, false>(o, ldo, A, A2, ai, ak, b, ldb, p0, p1); break;
    }
  }
}

// dst (rows_pad x ldd, bf16) = src (rows x cols, row stride ld_src) rounded, zero elsewhere.
// A register's lanes at a time: a scalar loop here cost a fifth of the kernel's time.
FF_WIDE inline void pack_rows(uint16_t* dst, int ldd, const float* src, long ld_src, int rows, int cols,
                              int rows_pad) {
  for (int r = 0; r < rows_pad; ++r) {
    uint16_t* d = dst + static_cast<size_t>(r) * ldd;
    const float* s = src + r * ld_src;
    const int n = r < rows ? cols : 0;
    int c = 0;
    for (; c + kRegLanes <= n; c += kRegLanes) {
      const RegH h = __builtin_convertvector(round_bf16(simd::load_as<RegF>(s + c)), RegH);
      std::memcpy(d + c, &h, sizeof h);
    }
    for (; c < n; ++c) d[c] = round_bf16(s[c]);
    std::memset(d + n, 0, (ldd - n) * sizeof(uint16_t));
  }
}
inline void pack_rows(uint16_t* dst, int ldd, const uint16_t* src, long ld_src, int rows, int cols,
                      int rows_pad) {
  for (int r = 0; r < rows_pad; ++r) {
    uint16_t* d = dst + static_cast<size_t>(r) * ldd;
    const int n = r < rows ? cols : 0;
    std::memcpy(d, src + r * ld_src, n * sizeof(uint16_t));
    std::memset(d + n, 0, (ldd - n) * sizeof(uint16_t));
  }
}

// pairT from rows: the rows matrix (n x Dp bf16) is an (n x Dp/2) matrix of words, and pairT is
// its transpose, done in 16 x 16 register blocks (n a multiple of 16, Dp of 32).
inline void pair_transpose(Word* dst, const uint16_t* rows, int n, int Dp) {
  const int Dw = Dp / 2;
  const Word* w = reinterpret_cast<const Word*>(rows);
  for (int t0 = 0; t0 < n; t0 += kLanes)
    for (int p0 = 0; p0 < Dw; p0 += kLanes)
      simd::transpose16(w + static_cast<size_t>(t0) * Dw + p0, Dw, dst + static_cast<size_t>(p0) * n + t0, n);
}

// pairR from rows: word (p, d) joins rows 2p and 2p + 1 at column d (n even, Dp a multiple of 16).
FF_WIDE inline void pair_interleave(Word* dst, const uint16_t* rows, int n, int Dp) {
  for (int p = 0; p < n / 2; ++p) {
    const uint16_t* lo = rows + static_cast<size_t>(2 * p) * Dp;
    Word* d = dst + static_cast<size_t>(p) * Dp;
    for (int c = 0; c < Dp; c += kRegLanes) {
      RegH a, b;
      std::memcpy(&a, lo + c, sizeof a);
      std::memcpy(&b, lo + Dp + c, sizeof b);
      const RegW wa = __builtin_convertvector(a, RegW), wb = __builtin_convertvector(b, RegW);
      simd::store(d + c, wa | (wb << 16));
    }
  }
}

// x = hi + lo: hi = x rounded to bf16, lo = the remainder rounded (x to about 16 bits).
inline RegW split_lo(const RegF& x, const RegW& hi) {
  RegF h;
  const RegW u = hi << 16;
  std::memcpy(&h, &u, sizeof h);
  return round_bf16(x - h);
}

// An fp32 tile (rows x kTile, rows even) rounded to bf16 in the rows layout: (rows, kTile/2)
// words; with lo, the remainder too.
FF_WIDE inline void tile_to_rows(Word* dst, const float* T, int rows, Word* lo = nullptr) {
  for (int i = 0; i < rows * kTile; i += kRegLanes) {
    const RegF x = simd::load_as<RegF>(T + i);
    const RegW hi = round_bf16(x);
    const RegH h = __builtin_convertvector(hi, RegH);
    std::memcpy(reinterpret_cast<uint16_t*>(dst) + i, &h, sizeof h);
    if (!lo) continue;
    const RegH l = __builtin_convertvector(split_lo(x, hi), RegH);
    std::memcpy(reinterpret_cast<uint16_t*>(lo) + i, &l, sizeof l);
  }
}

// The same tile in the pairR layout: (rows/2, kTile) words, pairing rows 2p and 2p + 1.
FF_WIDE inline void tile_to_pairs(Word* dst, const float* T, int rows, Word* lo = nullptr) {
  for (int p = 0; p < rows / 2; ++p)
    for (int c = 0; c < kTile; c += kRegLanes) {
      const RegF x0 = simd::load_as<RegF>(T + (2 * p) * kTile + c);
      const RegF x1 = simd::load_as<RegF>(T + (2 * p + 1) * kTile + c);
      const RegW h0 = round_bf16(x0), h1 = round_bf16(x1);
      simd::store(dst + p * kTile + c, h0 | (h1 << 16));
      if (lo) simd::store(lo + p * kTile + c, split_lo(x0, h0) | (split_lo(x1, h1) << 16));
    }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn16
