#include "kernels/gemm_amx.h"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <utility>

#include "kernels/amx_tiles.h"
#include "kernels/round_store.h"
#include "kernels/scratch.h"
#include "kernels/tile_pack.h"

namespace ff {
namespace {

using amx::computes_transposed;
using amx::kTileRows;
using amx::kTileSize;
using amx::kTileWords;
using amx::packed_a_words;
using amx::packed_b_words;
using amx::reads_a_in_place;
using amx::tiles_over;
constexpr int kStep = amx::kPackStep;  // values of the reduced dimension per tile step: 32
constexpr int kBlock = 2 * kTileRows;  // output rows and columns of a block: 32

// The operands as the blocks read them.
struct Operands {
  int M, N, K;
  int steps;      // K in steps of 32, rounded up
  int row_tiles;  // M in tiles of 16 rows, rounded up
  int col_tiles;  // N in tiles of 16 columns, rounded up
  // op(A): in place, row m at a + m * a_ld with the reduced dimension contiguous; or packed
  // (a_ld 0), the tile of rows 16 i.. and step s at a + (i * steps + s) * 512 values.
  const uint16_t* a;
  long a_ld;
  // Packed op(B): the tile of columns 16 j.. and step s at b + (j * steps + s) * 256 words.
  const uint32_t* b;
};

// Where the sums go: C (fp32) = alpha sums + beta C, or C16 (bf16) = the sums rounded to nearest
// even (round_store.h: the bits convert_from_f32 gives the fp32 sums).
struct Output {
  float alpha = 1.0f, beta = 0.0f;
  float* C = nullptr;
  uint16_t* C16 = nullptr;
  int ldc = 0;
  // The product computed is C^T (fp32 C only): the sums' (m, n) goes to C[n][m].
  bool transposed = false;
};

// How the work is cut, GotoBLAS's way for the tile unit. A work item is one row pair (32 rows) of
// one column panel over all of K, in chunks of the reduced dimension: over one chunk, the row
// pair's A tiles (at most 16 steps, 32 KiB) stay in L1 while the panel's column pairs stream past
// them from L2, where the panel's packed B (at most 1 MiB over all of K) stays from one row pair to
// the next. Without chunks a long K evicts A between column pairs, and without panels a wide B
// streams from memory once per row pair.
constexpr int kMaxChunkSteps = 16;
constexpr int kMaxPanelPairs = 8;
constexpr int kStageColumns = kMaxPanelPairs * kBlock;  // a panel's columns, at most 256
constexpr long kPanelBytes = 1L << 20;

struct Plan {
  int row_pairs, col_pairs;
  int panels;               // of the column pairs split evenly: panel q holds [q col_pairs / panels, ...)
  int chunk_steps, chunks;  // steps per chunk (the last may have fewer), chunks
};

Plan plan_for(const Operands& o, int threads) {
  Plan p{};
  p.row_pairs = tiles_over(o.row_tiles, 2);
  p.col_pairs = tiles_over(o.col_tiles, 2);
  const long pair_bytes = long(kBlock) * o.steps * kStep * 2;  // a column pair's packed B over all of K
  const int widest = int(std::clamp(kPanelBytes / pair_bytes, 1L, long(kMaxPanelPairs)));
  // At most `widest` pairs a panel; more, narrower ones where few row pairs would leave threads
  // without items (four each).
  p.panels = std::min(p.col_pairs, std::max(tiles_over(p.col_pairs, widest), tiles_over(4 * threads, p.row_pairs)));
  p.chunks = tiles_over(o.steps, kMaxChunkSteps);
  p.chunk_steps = tiles_over(o.steps, p.chunks);
  return p;
}

// The MR x NR tiles' block at row tile i0 and column tile j0 over steps [s0, s1), its sums started
// from zero (`fresh`) or from the accumulator `acc` (row stride acc_ld floats), and left there.
// Tiles 0-3 accumulate (0: rows 0-15 x columns 0-15, 1: rows 0-15 x 16-31, 2: rows 16-31 x 0-15,
// 3: rows 16-31 x 16-31), 4 and 5 hold A's two row tiles, 6 and 7 B's two column tiles.
template <class Tiles, int MR, int NR>
void block(Tiles& t, const Operands& o, int i0, int j0, int s0, int s1, bool fresh, float* acc, long acc_ld) {
  const long so = acc_ld * 4, row16 = acc_ld * kTileRows;
  if (fresh) {
    t.template zero<0>();
    if constexpr (NR > 1) t.template zero<1>();
    if constexpr (MR > 1) t.template zero<2>();
    if constexpr (MR > 1 && NR > 1) t.template zero<3>();
  } else {
    t.template load<0>(acc, so);
    if constexpr (NR > 1) t.template load<1>(acc + kTileWords, so);
    if constexpr (MR > 1) t.template load<2>(acc + row16, so);
    if constexpr (MR > 1 && NR > 1) t.template load<3>(acc + row16 + kTileWords, so);
  }
  // A's two row tiles at step s: in place, 16 rows lda apart; packed, 1 KiB tiles steps apart.
  const bool in_place = o.a_ld > 0;
  const long sa = in_place ? o.a_ld * 2 : 64;
  const uint16_t* a = in_place ? o.a + size_t(i0) * kTileRows * o.a_ld : o.a + size_t(i0) * o.steps * 2 * kTileSize;
  const size_t a_step = in_place ? kStep : 2 * kTileSize,
               a_next_row_tile = in_place ? size_t(kTileRows) * o.a_ld : size_t(o.steps) * 2 * kTileSize;
  const uint32_t* b = o.b + size_t(j0) * o.steps * kTileSize;
  const size_t next_col_tile = size_t(o.steps) * kTileSize;
  // Each product follows the loads it needs, so the unit starts on the first while the rest load;
  // the next step's B tiles (streamed from L2, where A's stay in L1) are fetched meanwhile.
  for (int s = s0; s < s1; ++s) {
    const uint32_t* b0 = b + size_t(s) * kTileSize;
    t.template load<4>(a + s * a_step, sa);
    t.template load<6>(b0, 64);
    t.prefetch(b0 + kTileSize);
    t.template dot<0, 4, 6>();
    if constexpr (MR > 1) {
      t.template load<5>(a + a_next_row_tile + s * a_step, sa);
      t.template dot<2, 5, 6>();
    }
    if constexpr (NR > 1) {
      t.template load<7>(b0 + next_col_tile, 64);
      t.prefetch(b0 + next_col_tile + kTileSize);
      t.template dot<1, 4, 7>();
      if constexpr (MR > 1) t.template dot<3, 5, 7>();
    }
  }
  t.template store<0>(acc, so);
  if constexpr (NR > 1) t.template store<1>(acc + kTileWords, so);
  if constexpr (MR > 1) t.template store<2>(acc + row16, so);
  if constexpr (MR > 1 && NR > 1) t.template store<3>(acc + row16 + kTileWords, so);
}

// The finished sums of rows m0.. and columns n0.. (stage: row stride ld floats) into the output.
void write_out(const Output& y, const float* stage, long ld, int m0, int n0, int rows, int cols) {
  if (y.transposed) {  // C^T's row n0 + j is C's column: the sums' columns become rows of C
    for (int j = 0; j < cols; ++j) {
      float* c = y.C + size_t(n0 + j) * y.ldc + m0;
      if (y.beta == 0.0f)
        for (int r = 0; r < rows; ++r) c[r] = y.alpha * stage[r * ld + j];
      else
        for (int r = 0; r < rows; ++r) c[r] = y.alpha * stage[r * ld + j] + y.beta * c[r];
    }
    return;
  }
  for (int r = 0; r < rows; ++r) {
    const float* s = stage + r * ld;
    if (y.C16) {
      uint16_t* c = y.C16 + size_t(m0 + r) * y.ldc + n0;
      for (int j = 0; j < cols; ++j) c[j] = detail::bf16_bits(s[j]);
      continue;
    }
    float* c = y.C + size_t(m0 + r) * y.ldc + n0;
    if (y.beta == 0.0f)  // C is not read: it may hold anything, NaN included
      for (int j = 0; j < cols; ++j) c[j] = y.alpha * s[j];
    else
      for (int j = 0; j < cols; ++j) c[j] = y.alpha * s[j] + y.beta * c[j];
  }
}

// One work item: row pair rp of column panel `panel`, chunk after chunk. The sums accumulate
// straight in C where the tiles' sums are the result (fp32, alpha 1, beta 0 or 1: C loaded first)
// and the item's tiles lie within C; else in the thread's stage, written out once at the end.
template <class Tiles>
void item(Tiles& t, const Operands& o, const Plan& p, const Output& y, int rp, int panel, float* stage) {
  const int i0 = 2 * rp, row_tiles = std::min(2, o.row_tiles - i0);
  // Even panels: a static share of items then holds as many blocks on every thread.
  const int j_begin = 2 * int(long(panel) * p.col_pairs / p.panels),
            j_end = std::min(o.col_tiles, 2 * int(long(panel + 1) * p.col_pairs / p.panels));
  const int m0 = i0 * kTileRows, n0 = j_begin * kTileWords;
  const bool whole = m0 + row_tiles * kTileRows <= o.M && j_end * kTileWords <= o.N;
  const bool into_c = y.C && !y.transposed && whole && y.alpha == 1.0f && (y.beta == 0.0f || y.beta == 1.0f);
  float* acc = into_c ? y.C + size_t(m0) * y.ldc + n0 : stage;
  const long acc_ld = into_c ? y.ldc : kStageColumns;
  for (int c = 0; c < p.chunks; ++c) {
    const int s0 = c * p.chunk_steps, s1 = std::min(o.steps, s0 + p.chunk_steps);
    const bool fresh = c == 0 && !(into_c && y.beta == 1.0f);
    for (int j0 = j_begin; j0 < j_end; j0 += 2) {
      float* at = acc + (j0 - j_begin) * kTileWords;
      const bool two_cols = j0 + 1 < j_end;
      if (row_tiles == 2 && two_cols)
        block<Tiles, 2, 2>(t, o, i0, j0, s0, s1, fresh, at, acc_ld);
      else if (row_tiles == 2)
        block<Tiles, 2, 1>(t, o, i0, j0, s0, s1, fresh, at, acc_ld);
      else if (two_cols)
        block<Tiles, 1, 2>(t, o, i0, j0, s0, s1, fresh, at, acc_ld);
      else
        block<Tiles, 1, 1>(t, o, i0, j0, s0, s1, fresh, at, acc_ld);
    }
  }
  if (!into_c)
    write_out(y, stage, kStageColumns, m0, n0, std::min(row_tiles * kTileRows, o.M - m0),
              std::min(o.N, j_end * kTileWords) - n0);
}

// This thread's share of the items, inside the caller's parallel region: consecutive row pairs of
// one panel, so the panel's B stays in this core's L2 from one to the next.
template <class Tiles>
void items(const Operands& o, const Output& y) {
  Tiles t;
  t.configure();
  alignas(64) float stage[kBlock * kStageColumns];  // 32 KiB
  const Plan p = plan_for(o, omp_get_num_threads());
#pragma omp for schedule(static)
  for (long q = 0; q < long(p.panels) * p.row_pairs; ++q)
    item(t, o, p, y, int(q % p.row_pairs), int(q / p.row_pairs), stage);
  t.release();
}

// Packs op(B) (and op(A) where it is not read in place), then runs the items, on the whole team.
void multiply(GemmTiles how, bool ta, bool tb, int M, int N, int K, const uint16_t* A, int lda, const uint16_t* B,
              int ldb, const Output& y) {
  Operands o{M, N, K, tiles_over(K, kStep), tiles_over(M, kTileRows), tiles_over(N, kTileWords), A, lda, nullptr};
  const bool a_in_place = reads_a_in_place(ta, M, K);
  const size_t b_words = packed_b_words(N, K);
  // The calling thread's scratch, read by the whole team for this call only.
  uint32_t* packed = detail::thread_scratch<uint32_t>(b_words + packed_a_words(ta, M, K));
  uint32_t* packed_a = packed + b_words;
  o.b = packed;
  if (!a_in_place) o.a = reinterpret_cast<const uint16_t*>(packed_a), o.a_ld = 0;
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (long q = 0; q < long(o.col_tiles) * o.steps; ++q)
      amx::pack_b_tile_at(packed, amx::b_tile_in_packing_order(q, tb, o.col_tiles, o.steps), o.steps, B, ldb, tb, K, N);
    if (!a_in_place) {  // two row tiles at a time: a stored row of dy gives them one whole cache line
#pragma omp for schedule(static) nowait
      for (long q = 0; q < long(tiles_over(o.row_tiles, 2)) * o.steps; ++q)
        amx::pack_a_tile_pair(packed_a, q, o.steps, A, lda, ta, M, K);
    }
#pragma omp barrier
#if defined(__x86_64__)
    if (how == GemmTiles::amx)
      items<amx::AmxTiles>(o, y);
    else
#endif
      items<amx::EmulatedTiles>(o, y);
  }
}

void check_choice(GemmTiles how) {
  if (how == GemmTiles::onednn) throw std::logic_error("gemm_bf16_on_tiles: called with the oneDNN choice");
#if !defined(__x86_64__)
  if (how == GemmTiles::amx) throw std::logic_error("gemm_bf16_on_tiles: the AMX tile unit exists only on x86-64");
#endif
}

}  // namespace

void gemm_bf16_on_tiles(GemmTiles how, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t* A,
                        int lda, const uint16_t* B, int ldb, float beta, float* C, int ldc) {
  check_choice(how);
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: C = beta C
    for (int r = 0; r < M; ++r)
      for (int j = 0; j < N; ++j) C[size_t(r) * ldc + j] = beta == 0.0f ? 0.0f : beta * C[size_t(r) * ldc + j];
    return;
  }
  if (computes_transposed(ta, tb, M, N)) {
    Output y{alpha, beta, C, nullptr, ldc};
    y.transposed = true;
    multiply(how, true, false, N, M, K, B, ldb, A, lda, y);
    return;
  }
  multiply(how, ta, tb, M, N, K, A, lda, B, ldb, Output{alpha, beta, C, nullptr, ldc});
}

size_t gemm_bf16_on_tiles_scratch_bytes(bool ta, bool tb, int M, int N, int K) {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  if (computes_transposed(ta, tb, M, N)) std::swap(M, N);
  return 4 * (packed_b_words(N, K) + packed_a_words(ta, M, K));
}

void gemm_bf16_on_tiles_rounded(GemmTiles how, bool ta, bool tb, int M, int N, int K, const uint16_t* A, int lda,
                                const uint16_t* B, int ldb, uint16_t* C16, int ldc) {
  check_choice(how);
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: +0
    for (int r = 0; r < M; ++r) std::fill(C16 + size_t(r) * ldc, C16 + size_t(r) * ldc + N, uint16_t(0));
    return;
  }
  multiply(how, ta, tb, M, N, K, A, lda, B, ldb, Output{1.0f, 0.0f, nullptr, C16, ldc});
}

}  // namespace ff
