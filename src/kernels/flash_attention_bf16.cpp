#include "kernels/flash_attention_bf16.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention_amx.h"
#include "kernels/attention_bf16_grad_out.h"
#include "kernels/attention_bf16_tiles.h"
#include "kernels/attention_softmax.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/scratch.h"

namespace ff {

// The entry points of one ISA tier: this file compiled for the build's target, and again by
// tiers/flash_attention_bf16_avx512*.cpp where that target lacks AVX-512 or AVX512-BF16
// (cpu_isa.h, KernelIsa).
struct FlashAttentionBf16Tier {
  decltype(&attention_forward_bf16) forward;
  decltype(&attention_backward_bf16) backward;
  decltype(&attention_backward_bf16_into) backward_into;
  decltype(&attention_backward_bf16_rope_rounded) backward_rope_rounded;
  decltype(&attention_block_forward_bf16) block_forward;
  decltype(&attention_block_backward_bf16) block_backward;
};

// A named namespace inside the anonymous one: the unity build (the sanitizer job) compiles this file
// with the fp32 kernels, whose helpers (kTile, Geometry, forward, ...) have the same names.
namespace {
namespace flash_bf16 {

using attn16::dot_rows;
using attn16::GradOut;

using attn16::kLanes;
using attn16::kRows;
using attn16::kTile;
using attn16::Word;
static_assert(kTile == attn::kSoftmaxTile);

int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Padded sizes of one block's tiles: the head dim to whole 16-word rows, the lengths to whole tiles.
struct Geometry {
  int Dp, Dw, Tqp, Tkp;
  Geometry(int Tq, int Tk, int D)
      : Dp(round_up(D, attn16::kDimAlign)),
        Dw(Dp / 2),
        Tqp(round_up(std::max(Tq, 1), kTile)),
        Tkp(round_up(std::max(Tk, 1), kTile)) {}
  explicit Geometry(const AttentionBlock& s) : Geometry(s.Tq, s.Tk, s.D) {}
  size_t kwords() const { return size_t(Tkp) * Dw; }  // one (Tkp, Dp) bf16 plane, in words
  size_t qwords() const { return size_t(Tqp) * Dw; }
  // Every part a multiple of 16 floats, so each starts on a cache line.
  size_t forward_floats() const {
    return 3 * kwords() + size_t(kTile) * Dw + kTile * kTile / 2 + size_t(kTile) * Dp + kTile * kTile;
  }
  size_t backward_floats() const {
    return 4 * kwords() + 4 * qwords() + 5 * kTile * kTile / 2 + 2 * size_t(Tkp) * Dp + size_t(Tqp) * Dp +
           2 * size_t(Tqp) + 2 * kTile * kTile + kTile;
  }
};

// The operands with their element types.
struct Operands {
  ConstTypedPtr q, k, v, dout, out;
};

void check_operand(DType t, const char* what) {
  if (t != DType::f32 && t != DType::bf16)
    throw std::invalid_argument(std::string("bf16 attention: ") + what + " is " + dtype_name(t) +
                                "; it takes fp32 or bf16");
}

// dst (rows_pad x ldd, bf16) = src rows, rounded where src is fp32.
void pack(uint16_t* dst, int ldd, ConstTypedPtr src, long ld, int rows, int cols, int rows_pad) {
  if (src.dtype() == DType::bf16)
    attn16::pack_rows(dst, ldd, static_cast<const uint16_t*>(src.data()), ld, rows, cols, rows_pad);
  else
    attn16::pack_rows(dst, ldd, src.f32(), ld, rows, cols, rows_pad);
}

// sum_c a[c] b[c] in fp32 (in lanes, as the fp32 kernel sums), a in bf16.
FF_WIDE float row_dot(const uint16_t* a, ConstTypedPtr b, int n) {
  float acc = 0;
  if (b.dtype() == DType::bf16) {
    const uint16_t* p = static_cast<const uint16_t*>(b.data());
#pragma omp simd reduction(+ : acc)
    for (int c = 0; c < n; ++c) acc += attn16::to_f32(a[c]) * attn16::to_f32(p[c]);
  } else {
    const float* p = b.f32();
#pragma omp simd reduction(+ : acc)
    for (int c = 0; c < n; ++c) acc += attn16::to_f32(a[c]) * p[c];
  }
  return acc;
}

// Largest visible column count over the kRows rows from r0 (<= 0: the row block sees nothing).
int block_cols(const int* ncols, int r0) {
  return std::max({ncols[r0], ncols[r0 + 1], ncols[r0 + 2], ncols[r0 + 3]});
}

// Scores (rows4 x 64, fp32) = A (rows, bf16) Bt (pairT) over the whole head dim, each row block
// only up to the vector holding its last visible column (the causal triangle's diagonal tiles
// cost about half); later columns are left stale for the softmax to select away.
FF_WIDE void scores(float* S, const Word* A, int Dw, const Word* Bt, int ldb, int rows4, const int* ncols) {
  for (int r0 = 0; r0 < rows4; r0 += kRows) {
    const int cmax = block_cols(ncols, r0);
    if (cmax <= 0) continue;
    const int width = round_up(cmax, kLanes);
    dot_rows<false>(S + r0 * kTile, kTile, A + r0 * Dw, nullptr, Dw, 1, Bt, ldb, width, 0, Dw);
  }
}

// Out (rows4 x Dp) += T (rows, bf16 tile; + T2 if given) B (pairR rows from the tile's first
// key) over the visible keys of each row block.
FF_WIDE void rows_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int rows4,
                        const int* ncols) {
  for (int r0 = 0; r0 < rows4; r0 += kRows) {
    const int pairs = (block_cols(ncols, r0) + 1) / 2, at = r0 * (kTile / 2);
    dot_rows<true>(Out + r0 * Dp, Dp, T + at, T2 ? T2 + at : nullptr, kTile / 2, 1, B, Dp, Dp, 0, pairs);
  }
}

// Out (keys4 x Dp) += T^T (T a tile in pairR; + T2 if given) B (pairR rows from the tile's first
// query): key row block c0 needs only the queries from the first one that sees key c0 (the ones
// before see none of the block's keys, so their entries of T are exact zeros).
FF_WIDE void transposed_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int keys4,
                              int rows, const int* ncols) {
  for (int c0 = 0; c0 < keys4; c0 += kRows) {
    int first = 0;
    while (first < rows && ncols[first] <= c0) ++first;
    if (first < rows)
      dot_rows<true>(Out + c0 * Dp, Dp, T + c0, T2 ? T2 + c0 : nullptr, 1, kTile, B, Dp, Dp, first / 2,
                     (rows + 1) / 2);
  }
}

// The three products on the vector units (the functions above).
struct VectorProducts {
  void scores(float* S, const Word* A, int Dw, const Word* Bt, int ldb, int rows4, const int* ncols) {
    flash_bf16::scores(S, A, Dw, Bt, ldb, rows4, ncols);
  }
  void rows_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int rows4, const int* ncols) {
    flash_bf16::rows_times(Out, Dp, T, T2, B, rows4, ncols);
  }
  void transposed_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int keys4, int rows,
                        const int* ncols) {
    flash_bf16::transposed_times(Out, Dp, T, T2, B, keys4, rows, ncols);
  }
};

// Largest of ncols[r0 .. r1).
int span_max(const int* ncols, int r0, int r1) {
  int m = 0;
  for (int r = r0; r < r1; ++r) m = std::max(m, ncols[r]);
  return m;
}

// The same products on tile registers (attention_amx.h): 16-row blocks, so a block computes up to
// the largest visible column of its 16 rows, and a reduction runs in whole 32-entry steps. What
// that adds is exact: past a row's visible columns its probabilities and score gradients are
// exact zeros (the softmax and score_grad write them), and the operands they meet there are
// finite (zero-padded past the sequence). Rows past rows4 compute garbage nobody reads: every
// buffer holds whole 64-row tiles, and those rows lie past the sequence's end.
template <class Tiles>
struct TileProducts {
  Tiles t;
  // transposed_times's tile, transposed: (kTile keys, kTile / 2 query pairs) words, and its remainder.
  alignas(64) Word At[kTile * kTile / 2];
  alignas(64) Word At2[kTile * kTile / 2];

  TileProducts() { t.configure(); }
  ~TileProducts() { t.release(); }
  TileProducts(const TileProducts&) = delete;
  TileProducts& operator=(const TileProducts&) = delete;

  void scores(float* S, const Word* A, int Dw, const Word* Bt, int ldb, int rows4, const int* ncols) {
    for (int r0 = 0; r0 < rows4; r0 += attn16::kTileRows) {
      const int cmax = span_max(ncols, r0, std::min(rows4, r0 + attn16::kTileRows));
      if (cmax <= 0) continue;
      attn16::tile_rows(t, S + r0 * kTile, kTile, A + size_t(r0) * Dw, nullptr, Dw, Bt, ldb,
                        round_up(cmax, attn16::kTileWords), Dw / attn16::kTileWords, false);
    }
  }
  void rows_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int rows4, const int* ncols) {
    for (int r0 = 0; r0 < rows4; r0 += attn16::kTileRows) {
      const int pairs = (span_max(ncols, r0, std::min(rows4, r0 + attn16::kTileRows)) + 1) / 2;
      const int at = r0 * (kTile / 2), steps = (pairs + attn16::kTileWords - 1) / attn16::kTileWords;
      attn16::tile_rows(t, Out + size_t(r0) * Dp, Dp, T + at, T2 ? T2 + at : nullptr, kTile / 2, B, Dp, Dp, steps,
                        true);
    }
  }
  void transposed_times(float* Out, int Dp, const Word* T, const Word* T2, const Word* B, int keys4, int rows,
                        const int* ncols) {
    const int rows4 = round_up(rows, kRows);
    const int keys_seen = std::min(keys4, span_max(ncols, 0, rows4));  // later keys: all-zero columns of T
    const int steps = ((rows + 1) / 2 + attn16::kTileWords - 1) / attn16::kTileWords;
    transpose(At, T, rows4 / 2);
    if (T2) transpose(At2, T2, rows4 / 2);
    for (int c0 = 0; c0 < keys_seen; c0 += attn16::kTileRows)
      attn16::tile_rows(t, Out + size_t(c0) * Dp, Dp, At + c0 * (kTile / 2), T2 ? At2 + c0 * (kTile / 2) : nullptr,
                        kTile / 2, B, Dp, Dp, steps, true);
  }

 private:
  // dst (kTile, kTile / 2) = src (kTile / 2, kTile)^T in words, the pairs from `valid` on zeroed
  // (tile_to_pairs wrote only the first valid ones).
  static void transpose(Word* dst, const Word* src, int valid) {
    for (int p0 = 0; p0 < kTile / 2; p0 += kLanes)
      for (int k0 = 0; k0 < kTile; k0 += kLanes)
        simd::transpose16(src + p0 * kTile + k0, kTile, dst + k0 * (kTile / 2) + p0, kTile / 2);
    if (valid < kTile / 2)
      for (int k = 0; k < kTile; ++k) std::memset(dst + k * (kTile / 2) + valid, 0, (kTile / 2 - valid) * sizeof(Word));
  }
};

// dS = P o (dP - D_i) on the visible columns [cbeg, ncols), 0 elsewhere (dP may be stale past them).
FF_WIDE void score_grad(float* dP, const float* P, const float* Dd, int rows4, const int* ncols, const int* cbeg) {
  for (int r = 0; r < rows4; ++r) {
    float* g = dP + r * kTile;
    const float* p = P + r * kTile;
    const float dr = Dd[r];
    const int nc = ncols[r], cb = cbeg ? cbeg[r] : 0;
#pragma omp simd
    for (int c = 0; c < kTile; ++c) g[c] = c < nc && c >= cb ? p[c] * (g[c] - dr) : 0.0f;
  }
}

// Returns the tiles a document mask let it skip (zero counts without one).
template <class Products>
FF_WIDE AttentionTileCounts forward_head(TypedPtr out, float* lse, const Operands& x, const AttentionBlock& s,
                                         int b, int h) {
  Products mul;
  const Geometry g(s);
  const int Dp = g.Dp, Dw = g.Dw, Tkp = g.Tkp;
  const int kvh = h / (s.H / s.Hkv);
  float* base = detail::thread_scratch<float>(g.forward_floats());
  Word* Kt = reinterpret_cast<Word*>(base);                      // pairT (Dw, Tkp)
  Word* Vr = Kt + g.kwords();                                    // pairR (Tkp / 2, Dp)
  uint16_t* tmp = reinterpret_cast<uint16_t*>(Vr + g.kwords());  // rows (Tkp, Dp)
  Word* Qw = reinterpret_cast<Word*>(tmp) + g.kwords();          // rows (kTile, Dp)
  Word* Pw = Qw + kTile * Dw;                                    // rows (kTile, kTile)
  float* O = reinterpret_cast<float*>(Pw + kTile * kTile / 2);   // (kTile, Dp) unnormalised
  float* S = O + kTile * Dp;                                     // (kTile, kTile)
  float m[kTile], l[kTile];
  int ncols[kTile], kbeg[kTile], cbeg[kTile];
  const bool docs = s.q_doc != nullptr;
  AttentionTileCounts tiles;
  const float scale = 1.0f / std::sqrt(float(s.D));
  const long kv_off = b * s.kv_batch + long(kvh) * s.D, q_off = b * s.q_batch + long(h) * s.D;
  pack(tmp, Dp, x.k.at(kv_off), s.kv_row, s.Tk, s.D, Tkp);
  attn16::pair_transpose(Kt, tmp, Tkp, Dp);
  pack(tmp, Dp, x.v.at(kv_off), s.kv_row, s.Tk, s.D, Tkp);
  attn16::pair_interleave(Vr, tmp, Tkp, Dp);
  for (int t0 = 0; t0 < s.Tq; t0 += kTile) {
    const int rows = std::min(kTile, s.Tq - t0), rows4 = round_up(rows, kRows);
    int kmax = 0;
    for (int r = 0; r < rows4; ++r) {
      kmax = std::max(kmax, r < rows ? attention_block_key_end(s, t0 + r) : 0);
      kbeg[r] = docs && r < rows ? attention_block_key_begin(s, b, t0 + r) : 0;
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0;
    }
    pack(reinterpret_cast<uint16_t*>(Qw), Dp, x.q.at(q_off + t0 * s.q_row), s.q_row, rows, s.D, rows4);
    std::fill(O, O + size_t(rows4) * Dp, 0.0f);
    for (int j0 = 0; j0 < kmax; j0 += kTile) {
      for (int r = 0; r < rows4; ++r)
        ncols[r] = r < rows ? std::min(attention_block_key_end(s, t0 + r) - j0, kTile) : 0;
      if (docs) {
        const bool seen = attn::document_columns(kbeg, j0, rows4, ncols, cbeg);
        ++(seen ? tiles.visited : tiles.skipped);
        if (!seen) continue;
      }
      mul.scores(S, Qw, Dw, Kt + j0, Tkp, rows4, ncols);
      attn::masked_online_softmax(S, m, l, O, Dp, rows4, ncols, docs ? cbeg : nullptr, scale);
      attn16::tile_to_rows(Pw, S, rows4);
      mul.rows_times(O, Dp, Pw, nullptr, Vr + size_t(j0 / 2) * Dp, rows4, ncols);
    }
    for (int r = 0; r < rows; ++r) {
      const long o = b * s.o_batch + (t0 + r) * s.o_row + long(h) * s.D;
      const bool seen = l[r] > 0;
      const float inv = seen ? 1.0f / l[r] : 0.0f;
      const float* src = O + size_t(r) * Dp;
      if (out.dtype() == DType::bf16) {
        uint16_t* d = static_cast<uint16_t*>(out.data()) + o;
        for (int c = 0; c < s.D; ++c) d[c] = attn16::round_bf16(src[c] * inv);
      } else {
        float* d = out.f32() + o;
        for (int c = 0; c < s.D; ++c) d[c] = src[c] * inv;
      }
      lse[b * s.l_batch + h * s.l_head + t0 + r] =
          seen ? m[r] + std::log(l[r]) : -std::numeric_limits<float>::infinity();
    }
  }
  return tiles;
}

// One (batch, KV head), key tiles outer and query tiles inner over every query head of the group:
// dK and dV of this KV head are summed here in a fixed order and no other task writes them.
template <class Products>
FF_WIDE AttentionTileCounts backward_group(const GradOut& o, const Operands& x, const float* lse,
                                           const AttentionBlock& s, DsTerms ds, int b, int kvh) {
  Products mul;
  const Geometry g(s);
  const int Dp = g.Dp, Dw = g.Dw, Tkp = g.Tkp, Tqp = g.Tqp;
  float* base = detail::thread_scratch<float>(g.backward_floats());
  Word* Kt = reinterpret_cast<Word*>(base);                        // pairT (Dw, Tkp)
  Word* Kr = Kt + g.kwords();                                      // pairR (Tkp / 2, Dp)
  Word* Vt = Kr + g.kwords();                                      // pairT (Dw, Tkp)
  uint16_t* tmp = reinterpret_cast<uint16_t*>(Vt + g.kwords());    // rows (Tkp, Dp)
  Word* Qw = reinterpret_cast<Word*>(tmp) + g.kwords();            // rows (Tqp, Dp)
  Word* Qr = Qw + g.qwords();                                      // pairR (Tqp / 2, Dp)
  Word* dOw = Qr + g.qwords();                                     // rows (Tqp, Dp)
  Word* dOr = dOw + g.qwords();                                    // pairR (Tqp / 2, Dp)
  Word* Pr = dOr + g.qwords();                                     // pairR (kTile / 2, kTile)
  Word* dSw = Pr + kTile * kTile / 2;                              // rows (kTile, kTile)
  Word* dSr = dSw + kTile * kTile / 2;                             // pairR (kTile / 2, kTile)
  Word* dSw2 = dSr + kTile * kTile / 2;                            // dSw's remainder (lo)
  Word* dSr2 = dSw2 + kTile * kTile / 2;                           // dSr's remainder (lo)
  float* dK = reinterpret_cast<float*>(dSr2 + kTile * kTile / 2);  // (Tkp, Dp), unscaled
  float* dV = dK + size_t(Tkp) * Dp;                               // (Tkp, Dp)
  float* dQ = dV + size_t(Tkp) * Dp;                               // (Tqp, Dp), unscaled
  float* L = dQ + size_t(Tqp) * Dp;                                // (Tqp) log-sum-exp
  float* Dd = L + Tqp;                                             // (Tqp) rowsum(dO o O)
  float* P = Dd + Tqp;                                             // (kTile, kTile)
  float* dS = P + kTile * kTile;                                   // (kTile, kTile)
  int* ncols = reinterpret_cast<int*>(dS + kTile * kTile);         // kTile ints in kTile floats
  int cbeg[kTile];
  const bool docs = s.q_doc != nullptr;
  std::vector<int> kbeg(docs ? size_t(Tqp) : 0, 0);  // each query row's first visible key
  for (int t = 0; docs && t < s.Tq; ++t) kbeg[size_t(t)] = attention_block_key_begin(s, b, t);
  AttentionTileCounts tiles;

  const float scale = 1.0f / std::sqrt(float(s.D));
  const bool two = ds == DsTerms::two;
  const long kv_off = b * s.kv_batch + long(kvh) * s.D;
  pack(tmp, Dp, x.k.at(kv_off), s.kv_row, s.Tk, s.D, Tkp);
  attn16::pair_transpose(Kt, tmp, Tkp, Dp);
  attn16::pair_interleave(Kr, tmp, Tkp, Dp);
  pack(tmp, Dp, x.v.at(kv_off), s.kv_row, s.Tk, s.D, Tkp);
  attn16::pair_transpose(Vt, tmp, Tkp, Dp);
  std::fill(dK, dK + 2 * size_t(Tkp) * Dp, 0.0f);

  const int group = s.H / s.Hkv;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const long q_off = b * s.q_batch + long(h) * s.D, o_off = b * s.o_batch + long(h) * s.D;
    pack(reinterpret_cast<uint16_t*>(Qw), Dp, x.q.at(q_off), s.q_row, s.Tq, s.D, Tqp);
    attn16::pair_interleave(Qr, reinterpret_cast<const uint16_t*>(Qw), Tqp, Dp);
    pack(reinterpret_cast<uint16_t*>(dOw), Dp, x.dout.at(o_off), s.o_row, s.Tq, s.D, Tqp);
    attn16::pair_interleave(dOr, reinterpret_cast<const uint16_t*>(dOw), Tqp, Dp);
    std::fill(dQ, dQ + size_t(Tqp) * Dp, 0.0f);
    // D_i from dO as rounded for dP = dO V^T, so that sum_j P_ij dP_ij - D_i stays ~0 as in exact
    // arithmetic (the fp32 dO would leave u dO.O in every dS of the row, and so in dq).
    for (int t = 0; t < Tqp; ++t) {
      const bool seen = t < s.Tq && attention_block_key_end(s, t) > 0;
      Dd[t] = seen ? row_dot(reinterpret_cast<const uint16_t*>(dOw) + size_t(t) * Dp,
                             x.out.at(o_off + t * s.o_row), s.D)
                   : 0.0f;
      L[t] = seen ? lse[b * s.l_batch + h * s.l_head + t] : 0.0f;
    }
    for (int j0 = 0; j0 < s.Tk; j0 += kTile) {
      const int keys4 = round_up(std::min(kTile, s.Tk - j0), kRows);
      const size_t kj = size_t(j0) * Dp, kp = size_t(j0 / 2) * Dp;
      for (int i0 = 0; i0 < s.Tq; i0 += kTile) {
        const int rows = std::min(kTile, s.Tq - i0), rows4 = round_up(rows, kRows);
        bool any = false;
        for (int r = 0; r < rows4; ++r) {
          ncols[r] = r < rows ? std::min(attention_block_key_end(s, i0 + r) - j0, kTile) : 0;
          any = any || ncols[r] > 0;
        }
        if (!any) continue;
        if (docs) {
          const bool seen = attn::document_columns(kbeg.data() + i0, j0, rows4, ncols, cbeg);
          ++(seen ? tiles.visited : tiles.skipped);
          if (!seen) continue;
        }
        const int* first = docs ? cbeg : nullptr;
        const size_t qp = size_t(i0 / 2) * Dp;
        mul.scores(P, Qw + size_t(i0) * Dw, Dw, Kt + j0, Tkp, rows4, ncols);
        attn::probabilities(P, L + i0, rows4, ncols, first, scale);
        attn16::tile_to_pairs(Pr, P, rows4);
        mul.transposed_times(dV + kj, Dp, Pr, nullptr, dOr + qp, keys4, rows, ncols);  // dV += P^T dO
        mul.scores(dS, dOw + size_t(i0) * Dw, Dw, Vt + j0, Tkp, rows4, ncols);         // dP = dO V^T
        score_grad(dS, P, Dd + i0, rows4, ncols, first);
        // dS as hi + lo bf16 terms unless asked for one rounding (DsTerms says why); the products
        // read B once for both terms.
        Word* lo_w = two ? dSw2 : nullptr;
        Word* lo_r = two ? dSr2 : nullptr;
        attn16::tile_to_rows(dSw, dS, rows4, lo_w);
        attn16::tile_to_pairs(dSr, dS, rows4, lo_r);
        mul.rows_times(dQ + size_t(i0) * Dp, Dp, dSw, lo_w, Kr + kp, rows4, ncols);  // dQ += dS K
        mul.transposed_times(dK + kj, Dp, dSr, lo_r, Qr + qp, keys4, rows, ncols);   // dK += dS^T Q
      }
    }
    for (int t = 0; t < s.Tq; ++t)
      attn16::store_q_row(o, b * s.q_batch + t * s.q_row + long(h) * s.D, dQ + size_t(t) * Dp, scale, t, s.D);
  }
  for (int t = 0; t < s.Tk; ++t)
    attn16::store_kv_row(o, b * s.kv_batch + t * s.kv_row + long(kvh) * s.D, dK + size_t(t) * Dp,
                         dV + size_t(t) * Dp, scale, t, s.D);
  return tiles;
}

void check_operands(const Operands& x, const AttentionBlock& s) {
  check_attention_block(s);
  check_operand(x.q.dtype(), "q");
  check_operand(x.k.dtype(), "k");
  check_operand(x.v.dtype(), "v");
  if (x.dout) check_operand(x.dout.dtype(), "dout");
  if (x.out) check_operand(x.out.dtype(), "out");
}

// The block a plain causal call is: whole sequences, out (B, T, H, D) and lse (B, H, T) contiguous.
AttentionBlock block_of(const AttentionShape& s) {
  AttentionBlock b = block_of_shape(s);
  if (s.B < 0 || s.T < 0 || s.q_stride < s.H * s.D || s.kv_stride < s.Hkv * s.D)
    throw std::invalid_argument("bf16 attention: bad shape B=" + std::to_string(s.B) +
                                " T=" + std::to_string(s.T) + " strides " + std::to_string(s.q_stride) + "/" +
                                std::to_string(s.kv_stride) + " (at least H*D / Hkv*D)");
  return b;
}

void forward(TypedPtr out, float* lse, const Operands& x, const AttentionBlock& s) {
  check_operands(x, s);
  check_operand(out.dtype(), "out");
  const int tasks = s.B * s.H;
  const AttentionTiles unit = attention_tiles();
  uint64_t visited = 0, skipped = 0;
#pragma omp parallel for schedule(static) reduction(+ : visited, skipped)
  for (int task = 0; task < tasks; ++task) {
    const int b = task / s.H, h = task % s.H;
    AttentionTileCounts c;
    switch (unit) {
#if defined(__x86_64__) && FF_ISA_LEVEL >= 2
      case AttentionTiles::amx: c = forward_head<TileProducts<attn16::AmxTiles>>(out, lse, x, s, b, h); break;
#endif
      case AttentionTiles::amx_emulated:
        c = forward_head<TileProducts<attn16::EmulatedTiles>>(out, lse, x, s, b, h);
        break;
      default: c = forward_head<VectorProducts>(out, lse, x, s, b, h); break;
    }
    visited += c.visited, skipped += c.skipped;
  }
  add_tiles(s.tiles, visited, skipped);
}

void backward(const GradOut& o, const Operands& x, const float* lse, const AttentionBlock& s, DsTerms ds) {
  check_operands(x, s);
  if (s.mask == AttentionMask::none) return;
  const int tasks = s.B * s.Hkv;
  const AttentionTiles unit = attention_tiles();
  uint64_t visited = 0, skipped = 0;
#pragma omp parallel for schedule(static) reduction(+ : visited, skipped)
  for (int task = 0; task < tasks; ++task) {
    const int b = task / s.Hkv, kvh = task % s.Hkv;
    AttentionTileCounts c;
    switch (unit) {
#if defined(__x86_64__) && FF_ISA_LEVEL >= 2
      case AttentionTiles::amx: c = backward_group<TileProducts<attn16::AmxTiles>>(o, x, lse, s, ds, b, kvh); break;
#endif
      case AttentionTiles::amx_emulated:
        c = backward_group<TileProducts<attn16::EmulatedTiles>>(o, x, lse, s, ds, b, kvh);
        break;
      default: c = backward_group<VectorProducts>(o, x, lse, s, ds, b, kvh); break;
    }
    visited += c.visited, skipped += c.skipped;
  }
  add_tiles(s.tiles, visited, skipped);
}

uint16_t* bf16_out(TypedPtr p, const char* what) {
  if (p.dtype() != DType::bf16)
    throw std::invalid_argument(std::string("bf16 attention: the rounded ") + what + " is " + dtype_name(p.dtype()) +
                                "; it must be bf16");
  return static_cast<uint16_t*>(p.data());
}

}  // namespace flash_bf16
}  // namespace

namespace FF_ISA_TAG {

void attention_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                            const AttentionShape& s) {
  flash_bf16::forward(out, lse, {q, k, v, {}, {}}, flash_bf16::block_of(s));
}
void attention_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                             ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                             const AttentionShape& s, DsTerms ds) {
  flash_bf16::backward({dq, dk, dv, true}, {q, k, v, dout, out}, lse, flash_bf16::block_of(s), ds);
}
void attention_backward_bf16_into(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                  ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                  const AttentionShape& s) {
  flash_bf16::backward({dq, dk, dv, false}, {q, k, v, dout, out}, lse, flash_bf16::block_of(s), DsTerms::two);
}
void attention_backward_bf16_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, ConstTypedPtr dout,
                                          ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out,
                                          const float* lse, const AttentionShape& s, const float* cos,
                                          const float* sin) {
  flash_bf16::GradOut o;
  o.q16 = flash_bf16::bf16_out(dq, "dq"), o.k16 = flash_bf16::bf16_out(dk, "dk");
  o.v16 = flash_bf16::bf16_out(dv, "dv"), o.cos = cos, o.sin = sin;
  // Its tables rotate row t by position t; a document-masked run's positions restart per document.
  if (s.doc)
    throw std::invalid_argument("bf16 attention: the fused RoPE backward takes no document ids; run "
                                "attention_backward_bf16_into and rope_backward_rounded");
  flash_bf16::backward(o, {q, k, v, dout, out}, lse, flash_bf16::block_of(s), DsTerms::two);
}
double attention_block_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                                    const AttentionBlock& s) {
  flash_bf16::forward(out, lse, {q, k, v, {}, {}}, s);
  return block_forward_flops(s);
}
double attention_block_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                     ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                     const AttentionBlock& s, DsTerms ds) {
  flash_bf16::backward({dq, dk, dv, true}, {q, k, v, dout, out}, lse, s, ds);
  return s.mask == AttentionMask::none ? 0 : block_backward_flops(s);
}

extern const FlashAttentionBf16Tier flash_attention_bf16_tier;
const FlashAttentionBf16Tier flash_attention_bf16_tier = {
    &attention_forward_bf16,        &attention_backward_bf16,      &attention_backward_bf16_into,
    &attention_backward_bf16_rope_rounded, &attention_block_forward_bf16, &attention_block_backward_bf16};

}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
namespace isa_avx512 {
extern const FlashAttentionBf16Tier flash_attention_bf16_tier;
}  // namespace isa_avx512
namespace isa_avx512_bf16 {
extern const FlashAttentionBf16Tier flash_attention_bf16_tier;
}  // namespace isa_avx512_bf16

namespace {
const FlashAttentionBf16Tier& flash_attention_bf16_for_cpu() {
#if FF_ISA_LEVEL < 2
  if (kernel_isa() >= KernelIsa::avx512_bf16) return isa_avx512_bf16::flash_attention_bf16_tier;
#endif
#if FF_ISA_LEVEL < 1
  if (kernel_isa() >= KernelIsa::avx512) return isa_avx512::flash_attention_bf16_tier;
#endif
  return FF_ISA_TAG::flash_attention_bf16_tier;
}
}  // namespace

void attention_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                            const AttentionShape& s) {
  flash_attention_bf16_for_cpu().forward(out, lse, q, k, v, s);
}
void attention_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                             ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                             const AttentionShape& s, DsTerms ds) {
  flash_attention_bf16_for_cpu().backward(dq, dk, dv, dout, q, k, v, out, lse, s, ds);
}
void attention_backward_bf16_into(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                  ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                  const AttentionShape& s) {
  flash_attention_bf16_for_cpu().backward_into(dq, dk, dv, dout, q, k, v, out, lse, s);
}
void attention_backward_bf16_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, ConstTypedPtr dout,
                                          ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out,
                                          const float* lse, const AttentionShape& s, const float* cos,
                                          const float* sin) {
  flash_attention_bf16_for_cpu().backward_rope_rounded(dq, dk, dv, dout, q, k, v, out, lse, s, cos, sin);
}
double attention_block_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                                    const AttentionBlock& s) {
  return flash_attention_bf16_for_cpu().block_forward(out, lse, q, k, v, s);
}
double attention_block_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                     ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                     const AttentionBlock& s, DsTerms ds) {
  return flash_attention_bf16_for_cpu().block_backward(dq, dk, dv, dout, q, k, v, out, lse, s, ds);
}

AttentionScratchFloats attention_bf16_scratch_floats(int Tq, int Tk, int D) {
  const flash_bf16::Geometry g(Tq, Tk, D);
  return {g.forward_floats(), g.backward_floats()};
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
