#pragma once
// Internal to the kernels layer: bf16 operands packed into the AMX tile unit's operand layouts
// for the tile GEMM (gemm_amx.cpp). A packed tile is 16 rows of 16 words, a word two bf16 values
// of the reduced dimension (the lower-addressed in the low half):
//  - A tile: word (r, c) = values k0 + 2c and k0 + 2c + 1 of row m0 + r of op(A);
//  - B tile: word (r, c) = rows k0 + 2r and k0 + 2r + 1 of column n0 + c of op(B).
// Zero past the matrix's edges, so the padding multiplies zeros.
//
// Packing is memory bound: the order the tiles are packed in decides how often each cache line of
// the stored operand is read (b_tile_in_packing_order). bench/gemm/bench_tile_pack times it.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/amx_tiles.h"
#include "kernels/isa_tier.h"

namespace ff::amx {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

constexpr int kPackStep = 2 * kTileWords;         // values of the reduced dimension per tile: 32
constexpr int kTileSize = kTileRows * kTileWords;  // words (or fp32 outputs) in one tile: 256

inline int tiles_over(int n, int per_tile) { return (n + per_tile - 1) / per_tile; }

// Whether op(A) is read in place: its rows hold the reduced dimension contiguously, whole tiles.
inline bool reads_a_in_place(bool ta, int M, int K) { return !ta && K % kPackStep == 0 && M % kTileRows == 0; }

// Words of packed op(B), and of packed op(A) where it is not read in place: the tile of columns
// (rows) 16 j.. and step s at (j * steps + s) * 256.
inline size_t packed_b_words(int N, int K) {
  return size_t(tiles_over(N, kTileWords)) * tiles_over(K, kPackStep) * kTileSize;
}
inline size_t packed_a_words(bool ta, int M, int K) {
  return reads_a_in_place(ta, M, K) ? 0 : size_t(tiles_over(M, kTileRows)) * tiles_over(K, kPackStep) * kTileSize;
}

// A weight gradient's shape, C = A^T B with both stored (K, .): one operand must be transposed to
// the tile unit's A layout, the other only paired. Transpose the narrower: where B is, the product
// run is C^T = B^T A, written back transposed (dW += dy^T x transposes x, not the wider dy).
inline bool computes_transposed(bool ta, bool tb, int M, int N) { return ta && !tb && N < M; }

// Element (r, c) of op(X), a rows x cols matrix (X stored row-major with row stride ld, transposed
// where trans), as the low half of a word; zero past its edges.
inline uint32_t op_value(const uint16_t* X, int ld, bool trans, int rows, int cols, int r, int c) {
  if (r >= rows || c >= cols) return 0;
  return trans ? X[size_t(c) * ld + r] : X[size_t(r) * ld + c];
}

// Which tile of packed op(B) (column tile j, step s) the q-th packed is, for a whole op(B) of
// col_tiles x steps tiles packed in order (or split in consecutive runs over threads):
// - op(B) = B^T (stored N x K): tile (j, s) reads 64 bytes, a whole cache line, of each of 16
//   stored rows, and the next step the next line of each: steps in order, column tile by column tile;
// - op(B) = B (stored K x N, a weight gradient's dy or x): tile (j, s) reads 32 bytes, half a line,
//   of each of 32 stored rows, and the next column tile the other half: column tiles in order,
//   step by step. In the other order each line's second half comes a whole K of rows later, read
//   from memory again: all of `bench`'s packing took 1.8x the time, its head's weight gradient
//   2.1x (bench_tile_pack on a Zen 3).
struct TileAt {
  int j, s;
};
inline TileAt b_tile_in_packing_order(long q, bool tb, int col_tiles, int steps) {
  if (tb) return {int(q / steps), int(q % steps)};
  return {int(q % col_tiles), int(q / col_tiles)};
}

// One tile of packed op(B): columns n0.., reduced values k0...
inline void pack_b_tile(uint32_t* dst, const uint16_t* B, int ldb, bool tb, int K, int N, int n0, int k0) {
  if (n0 + kTileWords <= N && k0 + kPackStep <= K) {  // whole: no bounds to check
    if (tb) {  // op(B)(k, n) = B[n][k]: a word is two neighbours of a stored row
      for (int c = 0; c < kTileWords; ++c) {
        const uint16_t* row = B + size_t(n0 + c) * ldb + k0;
        for (int r = 0; r < kTileRows; ++r) std::memcpy(dst + r * kTileWords + c, row + 2 * r, 4);
      }
    } else {  // op(B)(k, n) = B[k][n]: a tile row interleaves two stored rows
      for (int r = 0; r < kTileRows; ++r) {
        const uint16_t* lo = B + size_t(k0 + 2 * r) * ldb + n0;
        const uint16_t* hi = lo + ldb;
        for (int c = 0; c < kTileWords; ++c) dst[r * kTileWords + c] = uint32_t(lo[c]) | uint32_t(hi[c]) << 16;
      }
    }
    return;
  }
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileWords; ++c)
      dst[r * kTileWords + c] =
          op_value(B, ldb, tb, K, N, k0 + 2 * r, n0 + c) | op_value(B, ldb, tb, K, N, k0 + 2 * r + 1, n0 + c) << 16;
}

// One tile of packed op(A): rows m0.., reduced values k0... A tile is 1 KiB, so however far apart
// the stored rows are, the writes stay within a few cache lines.
inline void pack_a_tile(uint32_t* dst, const uint16_t* A, int lda, bool ta, int M, int K, int m0, int k0) {
  if (!ta && m0 + kTileRows <= M && k0 + kPackStep <= K) {  // whole: a tile row is 64 bytes of a stored row
    for (int r = 0; r < kTileRows; ++r) std::memcpy(dst + r * kTileWords, A + size_t(m0 + r) * lda + k0, 64);
    return;
  }
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileWords; ++c)
      dst[r * kTileWords + c] =
          op_value(A, lda, ta, M, K, m0 + r, k0 + 2 * c) | op_value(A, lda, ta, M, K, m0 + r, k0 + 2 * c + 1) << 16;
}

// The tiles of rows m0.. and m0 + 16.. (dst2 null: the first alone) at reduced values k0... Where
// op(A) = A^T (dy^T) and both are whole, each pair of stored rows is read once for both tiles, 32
// values (a whole cache line) of each: rows of dy a power-of-two apart share cache sets, so a row
// left half read is gone before the next tile would read the rest.
inline void pack_a_tiles(uint32_t* dst, uint32_t* dst2, const uint16_t* A, int lda, bool ta, int M, int K, int m0,
                         int k0) {
  if (ta && dst2 && m0 + 2 * kTileRows <= M && k0 + kPackStep <= K) {
    for (int c = 0; c < kTileWords; ++c) {
      const uint16_t* lo = A + size_t(k0 + 2 * c) * lda + m0;
      const uint16_t* hi = lo + lda;
      for (int r = 0; r < kTileRows; ++r) dst[r * kTileWords + c] = uint32_t(lo[r]) | uint32_t(hi[r]) << 16;
      for (int r = 0; r < kTileRows; ++r)
        dst2[r * kTileWords + c] = uint32_t(lo[kTileRows + r]) | uint32_t(hi[kTileRows + r]) << 16;
    }
    return;
  }
  pack_a_tile(dst, A, lda, ta, M, K, m0, k0);
  if (dst2) pack_a_tile(dst2, A, lda, ta, M, K, m0 + kTileRows, k0);
}

// Tile `at` of packed op(B) (K x N, `steps` tiles of K) into its place in `packed`.
inline void pack_b_tile_at(uint32_t* packed, TileAt at, int steps, const uint16_t* B, int ldb, bool tb, int K, int N) {
  pack_b_tile(packed + (size_t(at.j) * steps + at.s) * kTileSize, B, ldb, tb, K, N, at.j * kTileWords,
              at.s * kPackStep);
}

// The q-th pair of op(A)'s row tiles (M x K, `steps` tiles of K) into its place in `packed`:
// a step's row pairs in a row, so each stored row of an A^T is read along.
inline void pack_a_tile_pair(uint32_t* packed, long q, int steps, const uint16_t* A, int lda, bool ta, int M, int K) {
  const int row_tiles = tiles_over(M, kTileRows), pairs = tiles_over(row_tiles, 2);
  const int i = 2 * int(q % pairs), s = int(q / pairs);
  uint32_t* dst = packed + (size_t(i) * steps + s) * kTileSize;
  pack_a_tiles(dst, i + 1 < row_tiles ? dst + size_t(steps) * kTileSize : nullptr, A, lda, ta, M, K, i * kTileRows,
               s * kPackStep);
}

}  // namespace FF_ISA_TAG
}  // namespace ff::amx
