#pragma once
// Internal to flash_attention.cpp: register-blocked products on 64 x 64 tiles. Rows are taken
// four at a time; a 64-wide tile row is four 16-lane vectors, so a 4 x 64 block of results lives
// in 16 AVX-512 registers while the shared dimension streams through (narrower blocks without
// AVX-512: simd::kBlockVecs). Every operand is a zero-padded scratch copy whose row length is a
// multiple of 16, so there are no edge cases.
#include <algorithm>

#include "kernels/simd.h"

namespace ff::attn {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

using simd::kLanes;

constexpr int kTile = 64;  // queries per tile and keys per tile
constexpr int kRows = 4;   // rows per register block

// Blocks in the build's register width (simd::Reg, simd::kBlockVecs). Measured on a Zen 3: with
// 4 x 64 blocks of 64-byte vectors on AVX2, attention took 47% of the `bench` model's step.
using simd::kBlockVecs;
using simd::kRegLanes;
using simd::Reg;

// S[r][0 : 16 NC) = sum_d A[r][d] * Bt[d][0 : 16 NC) for the kRows rows at A (row stride lda);
// Bt is a transposed operand with row stride ldb. S has row stride kTile.
template <class T, int NC>
FF_WIDE inline void abt_block(const T* A, int lda, const T* Bt, int ldb, int K, T* S) {
  // Every loop over the register block is fully unrolled: a rolled one would force the
  // accumulators through the stack.
  constexpr int R = NC * kLanes / kRegLanes<T>;  // registers per row
  Reg<T> acc[kRows][R];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c) acc[r][c] = Reg<T>{};
  for (int d = 0; d < K; ++d) {
    Reg<T> b[R];
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c)
      b[c] = simd::load_as<Reg<T>>(Bt + static_cast<size_t>(d) * ldb + c * kRegLanes<T>);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const T a = A[r * lda + d];
#pragma GCC unroll 8
      for (int c = 0; c < R; ++c) acc[r][c] += a * b[c];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < R; ++c) simd::store(S + r * kTile + c * kRegLanes<T>, acc[r][c]);
}

// S (rows x 64) = A (rows x K) * Bt (K x 64). On a diagonal tile, row r only needs columns
// <= r, so each row block stops at the vector holding its last row's diagonal; the columns left
// unwritten are masked by the caller, which must never read them.
template <class T>
FF_WIDE void tile_abt(const T* A, int lda, const T* Bt, int ldb, int K, T* S, int rows,
                      bool diagonal) {
  for (int r0 = 0; r0 < rows; r0 += kRows) {
    const int nc = diagonal ? (r0 + kRows - 1) / kLanes + 1 : kTile / kLanes;
    const T* a = A + r0 * lda;
    for (int c0 = 0; c0 < nc; c0 += kBlockVecs) {  // one pass where a block holds the whole row
      const T* bt = Bt + c0 * kLanes;
      T* s = S + r0 * kTile + c0 * kLanes;
      switch (std::min(kBlockVecs, nc - c0)) {
        case 1: abt_block<T, 1>(a, lda, bt, ldb, K, s); break;
        case 2: abt_block<T, 2>(a, lda, bt, ldb, K, s); break;
        case 3: abt_block<T, 3>(a, lda, bt, ldb, K, s); break;
        default: abt_block<T, 4>(a, lda, bt, ldb, K, s); break;
      }
    }
  }
}

// Out[i][0 : 16 NV) += sum_{k0 <= k < k1} A(i, k) * B[k][0 : 16 NV) for kRows rows i, where
// A(i, k) = A[i * ai + k * ak]: (ai, ak) = (kTile, 1) reads a tile, (1, kTile) its transpose.
template <class T, int NV>
FF_WIDE inline void acc_block(T* Out, int ldo, const T* A, int ai, int ak, const T* B, int ldb,
                              int k0, int k1) {
  constexpr int R = NV * kLanes / kRegLanes<T>;  // registers per row
  Reg<T> acc[kRows][R];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < R; ++v) acc[r][v] = simd::load_as<Reg<T>>(Out + r * ldo + v * kRegLanes<T>);
  for (int k = k0; k < k1; ++k) {
    Reg<T> b[R];
#pragma GCC unroll 8
    for (int v = 0; v < R; ++v)
      b[v] = simd::load_as<Reg<T>>(B + static_cast<size_t>(k) * ldb + v * kRegLanes<T>);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const T a = A[r * ai + k * ak];
#pragma GCC unroll 8
      for (int v = 0; v < R; ++v) acc[r][v] += a * b[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < R; ++v) simd::store(Out + r * ldo + v * kRegLanes<T>, acc[r][v]);
}

// Which (i, k) pairs can be nonzero in A on a diagonal tile: kLower for k <= i (P and dS read
// by query row), kUpper for k >= i (the same tiles read transposed, by key row).
enum class Band { kFull, kLower, kUpper };

// Out (rows x width) += A (rows x kend, strides ai/ak) * B (kend x width); width a multiple of
// 16. The band trims k to the causal triangle so diagonal tiles cost about half.
template <class T>
FF_WIDE void tile_acc(T* Out, int ldo, const T* A, int ai, int ak, const T* B, int ldb, int width,
                      int rows, int kend, Band band) {
  for (int r0 = 0; r0 < rows; r0 += kRows) {
    int k0 = 0, k1 = kend;
    if (band == Band::kLower) k1 = std::min(kend, r0 + kRows);
    if (band == Band::kUpper) k0 = r0;
    if (k0 >= k1) continue;
    const T* a = A + r0 * ai;
    for (int d0 = 0; d0 < width; d0 += kBlockVecs * kLanes) {
      T* o = Out + r0 * ldo + d0;
      const T* b = B + d0;
      switch (std::min(kBlockVecs, (width - d0) / kLanes)) {
        case 1: acc_block<T, 1>(o, ldo, a, ai, ak, b, ldb, k0, k1); break;
        case 2: acc_block<T, 2>(o, ldo, a, ai, ak, b, ldb, k0, k1); break;
        case 3: acc_block<T, 3>(o, ldo, a, ai, ak, b, ldb, k0, k1); break;
        default: acc_block<T, 4>(o, ldo, a, ai, ak, b, ldb, k0, k1); break;
      }
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn
