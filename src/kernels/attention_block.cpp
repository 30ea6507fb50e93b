#include "kernels/attention_block.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention_pack.h"
#include "kernels/attention_softmax.h"
#include "kernels/attention_tiles.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/scratch.h"
#include "kernels/tier_pick.h"

namespace ff {

// The float block kernels of one ISA tier: this file compiled for the build's target, and again
// by tiers/attention_block_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct AttentionBlockTier {
  double (*forward)(float* out, float* lse, const float* q, const float* k, const float* v, const AttentionBlock& s);
  double (*backward)(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                     const float* v, const float* out, const float* lse, const AttentionBlock& s);
};

namespace {

using attn::Band;
using attn::kTile;
using attn::pack_rows;
using attn::pack_transposed;

int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Returns the tiles a document mask let it skip (zero counts without one).
template <class T>
FF_WIDE AttentionTileCounts forward_head(T* out, T* lse, const T* q, const T* k, const T* v,
                                         const AttentionBlock& s, int b, int h) {
  const int Dp = round_up(s.D, simd::kLanes), Tkp = round_up(std::max(s.Tk, 1), kTile);
  const int kvh = h / (s.H / s.Hkv);
  T* Kt = detail::thread_scratch<T>(2 * static_cast<size_t>(Tkp) * Dp + 2 * kTile * Dp + kTile * kTile);
  T* Vp = Kt + static_cast<size_t>(Dp) * Tkp;  // (Tkp, Dp)
  T* Qs = Vp + static_cast<size_t>(Tkp) * Dp;  // (kTile, Dp), pre-scaled by 1/sqrt(D)
  T* O = Qs + kTile * Dp;                      // (kTile, Dp) unnormalised output
  T* S = O + kTile * Dp;                       // (kTile, kTile)
  T m[kTile], l[kTile];
  int ncols[kTile], kbeg[kTile], cbeg[kTile];
  const bool docs = s.q_doc != nullptr;
  AttentionTileCounts tiles;
  const T scale = T(1) / std::sqrt(T(s.D));
  const T* kb = k + b * s.kv_batch + static_cast<long>(kvh) * s.D;
  const T* vb = v + b * s.kv_batch + static_cast<long>(kvh) * s.D;
  const T* qb = q + b * s.q_batch + static_cast<long>(h) * s.D;
  pack_transposed(Kt, Tkp, kb, s.kv_row, s.Tk, s.D, Dp);
  pack_rows(Vp, Dp, vb, s.kv_row, s.Tk, s.D, Tkp, T(1));
  for (int t0 = 0; t0 < s.Tq; t0 += kTile) {
    const int rows = std::min(kTile, s.Tq - t0), rows4 = round_up(rows, attn::kRows);
    int kmax = 0;
    for (int r = 0; r < rows4; ++r) {
      const int e = r < rows ? attention_block_key_end(s, t0 + r) : 0;
      kmax = std::max(kmax, e);
      kbeg[r] = docs && r < rows ? attention_block_key_begin(s, b, t0 + r) : 0;
      m[r] = -std::numeric_limits<T>::infinity();
      l[r] = 0;
    }
    pack_rows(Qs, Dp, qb + t0 * s.q_row, s.q_row, rows, s.D, rows4, scale);
    for (size_t e = 0; e < static_cast<size_t>(rows4) * Dp; ++e) O[e] = 0;
    for (int j0 = 0; j0 < kmax; j0 += kTile) {
      for (int r = 0; r < rows4; ++r)
        ncols[r] = r < rows ? std::min(attention_block_key_end(s, t0 + r) - j0, kTile) : 0;
      if (docs) {
        const bool seen = attn::document_columns(kbeg, j0, rows4, ncols, cbeg);
        ++(seen ? tiles.visited : tiles.skipped);
        if (!seen) continue;
      }
      attn::tile_abt(Qs, Dp, Kt + j0, Tkp, Dp, S, rows4, false);
      attn::masked_online_softmax(S, m, l, O, Dp, rows4, ncols, docs ? cbeg : nullptr, T(1));
      attn::tile_acc(O, Dp, S, kTile, 1, Vp + static_cast<size_t>(j0) * Dp, Dp, Dp, rows4, kTile,
                     Band::kFull);
    }
    for (int r = 0; r < rows; ++r) {
      T* o = out + b * s.o_batch + (t0 + r) * s.o_row + static_cast<long>(h) * s.D;
      const bool seen = l[r] > 0;
      const T inv = seen ? T(1) / l[r] : T(0);
      for (int d = 0; d < s.D; ++d) o[d] = O[static_cast<size_t>(r) * Dp + d] * inv;
      lse[b * s.l_batch + h * s.l_head + t0 + r] =
          seen ? m[r] + std::log(l[r]) : -std::numeric_limits<T>::infinity();
    }
  }
  return tiles;
}

template <class T>
double forward(T* out, T* lse, const T* q, const T* k, const T* v, const AttentionBlock& s) {
  check_attention_block(s);
  const int tasks = s.B * s.H;
  uint64_t visited = 0, skipped = 0;
#pragma omp parallel for schedule(static) reduction(+ : visited, skipped)
  for (int task = 0; task < tasks; ++task) {
    const AttentionTileCounts c = forward_head(out, lse, q, k, v, s, task / s.H, task % s.H);
    visited += c.visited, skipped += c.skipped;
  }
  add_tiles(s.tiles, visited, skipped);
  return block_forward_flops(s);
}

template <class T>
void merge(T* out, T* lse, const MergeLayout& a, const T* out_p, const T* lse_p, const MergeLayout& p) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.H; ++h)
      for (int t = 0; t < a.T; ++t) {
        T& L = lse[b * a.l_batch + h * a.l_head + t];
        const T Lp = lse_p[b * p.l_batch + h * p.l_head + t];
        if (Lp == neg_inf) continue;
        T* o = out + b * a.o_batch + t * a.o_row + static_cast<long>(h) * a.D;
        const T* op = out_p + b * p.o_batch + t * p.o_row + static_cast<long>(h) * p.D;
        if (L == neg_inf) {
          for (int d = 0; d < a.D; ++d) o[d] = op[d];
          L = Lp;
          continue;
        }
        const T mx = std::max(L, Lp);
        const T Lnew = mx + std::log(std::exp(L - mx) + std::exp(Lp - mx));
        const T wa = std::exp(L - Lnew), wp = std::exp(Lp - Lnew);
        for (int d = 0; d < a.D; ++d) o[d] = o[d] * wa + op[d] * wp;
        L = Lnew;
      }
}

// dS = P o (dP - D_i); zero wherever P is.
template <class T>
FF_WIDE void score_grad(T* dP, const T* P, const T* Dd, int rows4) {
  for (int r = 0; r < rows4; ++r) {
    T* g = dP + r * kTile;
    const T* p = P + r * kTile;
    const T dr = Dd[r];
#pragma omp simd
    for (int c = 0; c < kTile; ++c) g[c] = p[c] * (g[c] - dr);
  }
}

// One (batch, KV head): key tiles outer, query tiles inner, every query head of the group, so dK
// and dV of this KV head are summed here in a fixed order; no other task writes them.
template <class T>
FF_WIDE AttentionTileCounts backward_group(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k,
                                           const T* v, const T* out, const T* lse, const AttentionBlock& s,
                                           int b, int kvh) {
  const int Dp = round_up(s.D, simd::kLanes);
  const int Tkp = round_up(std::max(s.Tk, 1), kTile), Tqp = round_up(std::max(s.Tq, 1), kTile);
  const size_t kplane = static_cast<size_t>(Tkp) * Dp, qplane = static_cast<size_t>(Tqp) * Dp;
  T* Kt = detail::thread_scratch<T>(5 * kplane + 3 * qplane + 2 * static_cast<size_t>(Tqp) +
                                    2 * kTile * kTile + kTile);
  T* Kp = Kt + kplane;  // (Tkp, Dp)
  T* Vt = Kp + kplane;  // (Dp, Tkp)
  T* dK = Vt + kplane;  // (Tkp, Dp)
  T* dV = dK + kplane;  // (Tkp, Dp)
  T* Qs = dV + kplane;  // (Tqp, Dp) scaled queries
  T* dOp = Qs + qplane;
  T* dQ = dOp + qplane;
  T* L = dQ + qplane;  // (Tqp)
  T* Dd = L + Tqp;     // (Tqp)
  T* P = Dd + Tqp;     // (kTile, kTile)
  T* dS = P + kTile * kTile;
  int* ncols = reinterpret_cast<int*>(dS + kTile * kTile);  // kTile ints fit in kTile T's
  int cbeg[kTile];
  const bool docs = s.q_doc != nullptr;
  std::vector<int> kbeg(docs ? size_t(Tqp) : 0, 0);  // each query row's first visible key
  for (int t = 0; docs && t < s.Tq; ++t) kbeg[size_t(t)] = attention_block_key_begin(s, b, t);
  AttentionTileCounts tiles;

  const T scale = T(1) / std::sqrt(T(s.D));
  const T* kb = k + b * s.kv_batch + static_cast<long>(kvh) * s.D;
  const T* vb = v + b * s.kv_batch + static_cast<long>(kvh) * s.D;
  pack_transposed(Kt, Tkp, kb, s.kv_row, s.Tk, s.D, Dp);
  pack_rows(Kp, Dp, kb, s.kv_row, s.Tk, s.D, Tkp, T(1));
  pack_transposed(Vt, Tkp, vb, s.kv_row, s.Tk, s.D, Dp);
  for (size_t e = 0; e < 2 * kplane; ++e) dK[e] = 0;

  const int group = s.H / s.Hkv;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const T* qb = q + b * s.q_batch + static_cast<long>(h) * s.D;
    const long o_off = b * s.o_batch + static_cast<long>(h) * s.D;
    pack_rows(Qs, Dp, qb, s.q_row, s.Tq, s.D, Tqp, scale);
    pack_rows(dOp, Dp, dout + o_off, s.o_row, s.Tq, s.D, Tqp, T(1));
    for (size_t e = 0; e < qplane; ++e) dQ[e] = 0;
    for (int t = 0; t < Tqp; ++t) {
      T acc = 0, lt = 0;
      if (t < s.Tq && attention_block_key_end(s, t) > 0) {
        const T* o = out + o_off + t * s.o_row;
        const T* d = dout + o_off + t * s.o_row;
        for (int c = 0; c < s.D; ++c) acc += d[c] * o[c];
        lt = lse[b * s.l_batch + h * s.l_head + t];
      }
      Dd[t] = acc;
      L[t] = lt;
    }
    for (int j0 = 0; j0 < s.Tk; j0 += kTile) {
      const int keys4 = round_up(std::min(kTile, s.Tk - j0), attn::kRows);
      const size_t kj = static_cast<size_t>(j0) * Dp;
      for (int i0 = 0; i0 < s.Tq; i0 += kTile) {
        const int rows = std::min(kTile, s.Tq - i0), rows4 = round_up(rows, attn::kRows);
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
        const size_t qi = static_cast<size_t>(i0) * Dp;
        attn::tile_abt(Qs + qi, Dp, Kt + j0, Tkp, Dp, P, rows4, false);
        attn::probabilities(P, L + i0, rows4, ncols, docs ? cbeg : nullptr, T(1));
        attn::tile_acc(dV + kj, Dp, P, 1, kTile, dOp + qi, Dp, Dp, keys4, rows4, Band::kFull);
        attn::tile_abt(dOp + qi, Dp, Vt + j0, Tkp, Dp, dS, rows4, false);
        score_grad(dS, P, Dd + i0, rows4);
        attn::tile_acc(dQ + qi, Dp, dS, kTile, 1, Kp + kj, Dp, Dp, rows4, keys4, Band::kFull);
        attn::tile_acc(dK + kj, Dp, dS, 1, kTile, Qs + qi, Dp, Dp, keys4, rows4, Band::kFull);
      }
    }
    for (int t = 0; t < s.Tq; ++t) {
      T* d = dq + b * s.q_batch + t * s.q_row + static_cast<long>(h) * s.D;
      const T* src = dQ + static_cast<size_t>(t) * Dp;
      for (int c = 0; c < s.D; ++c) d[c] += scale * src[c];
    }
  }
  for (int t = 0; t < s.Tk; ++t) {
    const long off = b * s.kv_batch + t * s.kv_row + static_cast<long>(kvh) * s.D;
    for (int c = 0; c < s.D; ++c) {
      dk[off + c] += dK[static_cast<size_t>(t) * Dp + c];
      dv[off + c] += dV[static_cast<size_t>(t) * Dp + c];
    }
  }
  return tiles;
}

template <class T>
double backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const AttentionBlock& s) {
  check_attention_block(s);
  if (s.mask == AttentionMask::none) return 0;
  const int tasks = s.B * s.Hkv;
  uint64_t visited = 0, skipped = 0;
#pragma omp parallel for schedule(static) reduction(+ : visited, skipped)
  for (int task = 0; task < tasks; ++task) {
    const AttentionTileCounts c =
        backward_group(dq, dk, dv, dout, q, k, v, out, lse, s, task / s.Hkv, task % s.Hkv);
    visited += c.visited, skipped += c.skipped;
  }
  add_tiles(s.tiles, visited, skipped);
  return block_backward_flops(s);
}

}  // namespace

namespace FF_ISA_TAG {
extern const AttentionBlockTier attention_block_tier;
const AttentionBlockTier attention_block_tier = {&forward<float>, &backward<float>};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(AttentionBlockTier, attention_block_tier)

int attention_block_key_end(const AttentionBlock& s, int i) {
  switch (s.mask) {
    case AttentionMask::full: return s.Tk;
    case AttentionMask::none: return 0;
    case AttentionMask::causal: break;
  }
  // The causal mask is a bound per row because positions grow along both blocks.
  return std::clamp(s.q_pos + i - s.k_pos + 1, 0, s.Tk);
}

int attention_block_key_begin(const AttentionBlock& s, int b, int i) {
  if (!s.q_doc) return 0;
  const int32_t doc = s.q_doc[b * s.q_doc_batch + i];
  const int32_t* keys = s.k_doc + b * s.k_doc_batch;
  return int(std::lower_bound(keys, keys + s.Tk, doc) - keys);
}

void check_attention_block(const AttentionBlock& s) {
  if (s.B < 0 || s.Tq < 0 || s.Tk < 0 || s.D <= 0 || s.H <= 0 || s.Hkv <= 0 || s.H % s.Hkv != 0)
    throw std::invalid_argument("attention block: bad shape B=" + std::to_string(s.B) + " Tq=" +
                                std::to_string(s.Tq) + " Tk=" + std::to_string(s.Tk) + " H=" +
                                std::to_string(s.H) + " Hkv=" + std::to_string(s.Hkv) + " D=" +
                                std::to_string(s.D));
  if ((s.q_doc == nullptr) != (s.k_doc == nullptr))
    throw std::invalid_argument("attention block: document ids given for the queries or the keys alone; give both");
}

AttentionBlock contiguous_block(int B, int Tq, int Tk, int H, int Hkv, int D, long q_row, long kv_row) {
  AttentionBlock s{};
  s.B = B, s.Tq = Tq, s.Tk = Tk, s.H = H, s.Hkv = Hkv, s.D = D;
  s.q_row = q_row, s.q_batch = q_row * Tq;
  s.kv_row = kv_row, s.kv_batch = kv_row * Tk;
  s.o_row = long(H) * D, s.o_batch = s.o_row * Tq;
  s.l_head = Tq, s.l_batch = long(H) * Tq;
  s.q_pos = s.k_pos = 0;
  s.mask = AttentionMask::causal;
  return s;
}

uint64_t visible_pairs(const AttentionBlock& s) {
  uint64_t n = 0;
  for (int i = 0; i < s.Tq; ++i) n += uint64_t(attention_block_key_end(s, i));
  return n;
}
double block_forward_flops(const AttentionBlock& s) {
  return 4.0 * s.D * double(visible_pairs(s)) * s.H * s.B;
}
double block_backward_flops(const AttentionBlock& s) {
  return 10.0 * s.D * double(visible_pairs(s)) * s.H * s.B;
}

double attention_block_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                               const AttentionBlock& s) {
  return attention_block_tier_for_cpu().forward(out, lse, q, k, v, s);
}
double attention_block_forward(double* out, double* lse, const double* q, const double* k, const double* v,
                               const AttentionBlock& s) {
  return forward(out, lse, q, k, v, s);
}
void attention_merge(float* out, float* lse, const MergeLayout& acc, const float* out_p, const float* lse_p,
                     const MergeLayout& part) {
  merge(out, lse, acc, out_p, lse_p, part);
}
void attention_merge(double* out, double* lse, const MergeLayout& acc, const double* out_p,
                     const double* lse_p, const MergeLayout& part) {
  merge(out, lse, acc, out_p, lse_p, part);
}
double attention_block_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                                const float* k, const float* v, const float* out, const float* lse,
                                const AttentionBlock& s) {
  return attention_block_tier_for_cpu().backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}
double attention_block_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                                const double* k, const double* v, const double* out, const double* lse,
                                const AttentionBlock& s) {
  return backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
