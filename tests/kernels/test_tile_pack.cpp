// The tile GEMM's operand packing (kernels/tile_pack.h): every tile of every transpose holds the
// words the tile unit's layout defines, computed here value by value from the stored matrix, on
// whole tiles and ragged ones (a tail of rows, columns or the reduced dimension), with padded and
// odd row strides, padding zero; and the packing order visits every tile of op(B) once. The values
// are arbitrary 16-bit patterns (NaNs and denormals included): packing moves bits and must not
// touch them.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tile_pack.h"

namespace {

using ff::amx::kPackStep;
using ff::amx::kTileRows;
using ff::amx::kTileSize;
using ff::amx::kTileWords;

struct Stored {
  int rows, cols, ld;  // op(X) is rows x cols; X stored with row stride ld
  bool trans;
};

std::vector<uint16_t> random_bits(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = uint16_t(rng());
  return v;
}

// X's storage for op(X) rows x cols: (rows, ld) or, transposed, (cols, ld).
std::vector<uint16_t> storage(const Stored& s, unsigned seed) {
  return random_bits(size_t(s.trans ? s.cols : s.rows) * s.ld, seed);
}

std::string where(const char* what, const Stored& s, int t0, int k0) {
  return std::string(what) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ld " +
         std::to_string(s.ld) + (s.trans ? " transposed" : "") + ", tile at " + std::to_string(t0) + ", k0 " +
         std::to_string(k0);
}

// The shapes of op(X), rows x cols (op(B) is K x N, op(A) M x K): whole tiles, with and without a
// ragged tail beside them; row strides tight, padded by two values, and odd.
std::vector<Stored> shapes() {
  std::vector<Stored> out;
  for (bool trans : {false, true})
    for (auto [rows, cols] : {std::pair{64, 96}, std::pair{50, 77}, std::pair{32, 32}, std::pair{17, 40}}) {
      const int inner = trans ? rows : cols;  // the stored rows' length
      for (int pad : {0, 2, 3}) out.push_back({rows, cols, inner + pad, trans});
    }
  return out;
}

// Stored value (i, j) of op(X) for X stored row-major (ld) or, transposed, as its transpose; 0
// past op(X)'s edges.
uint32_t value(const std::vector<uint16_t>& X, const Stored& s, int i, int j) {
  if (i >= s.rows || j >= s.cols) return 0;
  return s.trans ? X[size_t(j) * s.ld + i] : X[size_t(i) * s.ld + j];
}

// The tiles the layout defines (tile_pack.h): B word (r, c) = op(B) rows k0 + 2r, k0 + 2r + 1 of
// column n0 + c; A word (r, c) = op(A) row m0 + r, values k0 + 2c, k0 + 2c + 1; the first value in
// the low half.
std::vector<uint32_t> b_tile(const std::vector<uint16_t>& B, const Stored& s, int n0, int k0) {
  std::vector<uint32_t> t(kTileSize);
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileWords; ++c)
      t[r * kTileWords + c] = value(B, s, k0 + 2 * r, n0 + c) | value(B, s, k0 + 2 * r + 1, n0 + c) << 16;
  return t;
}
std::vector<uint32_t> a_tile(const std::vector<uint16_t>& A, const Stored& s, int m0, int k0) {
  std::vector<uint32_t> t(kTileSize);
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kTileWords; ++c)
      t[r * kTileWords + c] = value(A, s, m0 + r, k0 + 2 * c) | value(A, s, m0 + r, k0 + 2 * c + 1) << 16;
  return t;
}

TEST(TilePack, BTilesHoldTheLayoutsWords) {
  for (const Stored& s : shapes()) {
    const int K = s.rows, N = s.cols;
    const auto B = storage(s, 1);
    for (int n0 = 0; n0 < N; n0 += kTileWords)
      for (int k0 = 0; k0 < K; k0 += kPackStep) {
        std::vector<uint32_t> got(kTileSize, 0xdeadbeef);
        ff::amx::pack_b_tile(got.data(), B.data(), s.ld, s.trans, K, N, n0, k0);
        ASSERT_EQ(got, b_tile(B, s, n0, k0)) << where("B", s, n0, k0);
      }
  }
}

TEST(TilePack, ATilesAndTilePairsHoldTheLayoutsWords) {
  for (const Stored& s : shapes()) {
    const int M = s.rows, K = s.cols;
    const auto A = storage(s, 2);
    for (int m0 = 0; m0 < M; m0 += kTileRows)
      for (int k0 = 0; k0 < K; k0 += kPackStep) {
        const std::vector<uint32_t> want = a_tile(A, s, m0, k0), next = a_tile(A, s, m0 + kTileRows, k0);
        std::vector<uint32_t> got(kTileSize, 0xdeadbeef);
        ff::amx::pack_a_tile(got.data(), A.data(), s.ld, s.trans, M, K, m0, k0);
        ASSERT_EQ(got, want) << where("A", s, m0, k0);
        // Two row tiles at once (the second may lie past M: all padding), and the first alone.
        std::vector<uint32_t> two(2 * kTileSize, 0xdeadbeef), one(kTileSize, 0xdeadbeef);
        ff::amx::pack_a_tiles(two.data(), two.data() + kTileSize, A.data(), s.ld, s.trans, M, K, m0, k0);
        ff::amx::pack_a_tiles(one.data(), nullptr, A.data(), s.ld, s.trans, M, K, m0, k0);
        ASSERT_EQ(std::vector<uint32_t>(two.begin(), two.begin() + kTileSize), want) << where("A pair", s, m0, k0);
        ASSERT_EQ(std::vector<uint32_t>(two.begin() + kTileSize, two.end()), next)
            << where("A pair's second", s, m0, k0);
        ASSERT_EQ(one, want) << where("A pair, first alone", s, m0, k0);
      }
  }
}

// Every tile exactly once, in the order that reads each stored line once: for op(B) = B^T a column
// tile's steps in a row, for op(B) = B a step's column tiles in a row.
TEST(TilePack, PackingOrderVisitsEveryTileOnceAlongTheStoredRows) {
  for (bool tb : {false, true})
    for (auto [col_tiles, steps] : {std::pair{1, 1}, std::pair{3, 5}, std::pair{8, 2}}) {
      std::vector<int> seen(size_t(col_tiles) * steps, 0);
      for (long q = 0; q < long(col_tiles) * steps; ++q) {
        const auto [j, s] = ff::amx::b_tile_in_packing_order(q, tb, col_tiles, steps);
        ASSERT_TRUE(j >= 0 && j < col_tiles && s >= 0 && s < steps) << q;
        ++seen[size_t(j) * steps + s];
        if (q == 0) continue;
        const auto [pj, ps] = ff::amx::b_tile_in_packing_order(q - 1, tb, col_tiles, steps);
        if (tb && s != 0) {
          EXPECT_TRUE(j == pj && s == ps + 1) << "B^T, tile " << q;
        }
        if (!tb && j != 0) {
          EXPECT_TRUE(s == ps && j == pj + 1) << "B, tile " << q;
        }
      }
      for (int n : seen) EXPECT_EQ(n, 1) << (tb ? "B^T " : "B ") << col_tiles << " x " << steps;
    }
}

}  // namespace
