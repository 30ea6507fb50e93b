#include "kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/attention_pack.h"
#include "kernels/attention_softmax.h"
#include "kernels/attention_tiles.h"
#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/scratch.h"
#include "kernels/tier_pick.h"

namespace ff {

// The float kernels of one ISA tier: this file compiled for the build's target, and again by
// tiers/flash_attention_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct FlashAttentionTier {
  void (*forward)(float* out, float* lse, const float* q, const float* k, const float* v, const AttentionShape& s);
  void (*backward)(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                   const float* v, const float* out, const float* lse, const AttentionShape& s);
};

namespace {

using attn::Band;
using attn::kTile;
using attn::pack_rows;
using attn::pack_transposed;
static_assert(kTile == attn::kSoftmaxTile);

struct Geometry {
  int Dp;  // head dim padded to whole vectors
  int nt;  // tiles along T
  int Tp;  // T padded to whole tiles
  explicit Geometry(const AttentionShape& s)
      : Dp((s.D + simd::kLanes - 1) / simd::kLanes * simd::kLanes),
        nt((s.T + kTile - 1) / kTile),
        Tp(nt * kTile) {}
};

int round4(int n) { return (n + attn::kRows - 1) / attn::kRows * attn::kRows; }

// Row r of a query tile sees ncols[r] keys of key tile j <= i: all of them below the diagonal, r + 1
// on it (the causal mask), none in the padding rows past `rows`.
void causal_columns(int* ncols, int rows, int rows4, bool diagonal) {
  for (int r = 0; r < rows4; ++r) ncols[r] = r >= rows ? 0 : (diagonal ? r + 1 : kTile);
}

template <class T>
FF_WIDE void forward_head(T* out, T* lse, const T* q, const T* k, const T* v,
                          const AttentionShape& s, int b, int h) {
  const Geometry g(s);
  const int Dp = g.Dp, Tp = g.Tp;
  const int kvh = h / (s.H / s.Hkv);
  T* Kt =
      detail::thread_scratch<T>(2 * static_cast<size_t>(Tp) * Dp + 2 * kTile * Dp + kTile * kTile);
  T* Vp = Kt + static_cast<size_t>(Dp) * Tp;  // (Tp, Dp)
  T* Qs = Vp + static_cast<size_t>(Tp) * Dp;  // (kTile, Dp), pre-scaled by 1/sqrt(D)
  T* O = Qs + kTile * Dp;                     // (kTile, Dp) unnormalised output
  T* S = O + kTile * Dp;                      // (kTile, kTile) scores, then probabilities
  T m[kTile], l[kTile];
  int ncols[kTile];

  const T scale = T(1) / std::sqrt(T(s.D));
  const size_t row0 = static_cast<size_t>(b) * s.T;
  const T* kb = k + row0 * s.kv_stride + static_cast<size_t>(kvh) * s.D;
  const T* vb = v + row0 * s.kv_stride + static_cast<size_t>(kvh) * s.D;
  const T* qb = q + row0 * s.q_stride + static_cast<size_t>(h) * s.D;
  pack_transposed(Kt, Tp, kb, s.kv_stride, s.T, s.D, Dp);
  pack_rows(Vp, Dp, vb, s.kv_stride, s.T, s.D, Tp, T(1));

  for (int i = 0; i < g.nt; ++i) {
    const int t0 = i * kTile;
    const int rows = std::min(kTile, s.T - t0);
    const int rows4 = round4(rows);
    pack_rows(Qs, Dp, qb + t0 * static_cast<size_t>(s.q_stride), s.q_stride, rows, s.D, rows4,
              scale);
    for (int r = 0; r < rows4; ++r) {
      m[r] = -std::numeric_limits<T>::infinity();
      l[r] = 0;
    }
    for (size_t e = 0; e < static_cast<size_t>(rows4) * Dp; ++e) O[e] = 0;
    for (int j = 0; j <= i; ++j) {
      const bool diag = j == i;
      attn::tile_abt(Qs, Dp, Kt + j * kTile, Tp, Dp, S, rows4, diag);
      causal_columns(ncols, rows, rows4, diag);
      attn::masked_online_softmax(S, m, l, O, Dp, rows4, ncols, nullptr, T(1));
      attn::tile_acc(O, Dp, S, kTile, 1, Vp + static_cast<size_t>(j) * kTile * Dp, Dp, Dp, rows4,
                     kTile, diag ? Band::kLower : Band::kFull);
    }
    for (int r = 0; r < rows; ++r) {
      const size_t t = row0 + t0 + r;
      T* o = out + (t * s.H + h) * s.D;
      const T inv = T(1) / l[r];
      for (int d = 0; d < s.D; ++d) o[d] = O[static_cast<size_t>(r) * Dp + d] * inv;
      lse[(static_cast<size_t>(b) * s.H + h) * s.T + t0 + r] = m[r] + std::log(l[r]);
    }
  }
}

void validate(const AttentionShape& s) {
  if (s.B < 0 || s.T < 0 || s.D <= 0 || s.H <= 0 || s.Hkv <= 0 || s.H % s.Hkv != 0 ||
      s.q_stride < s.H * s.D || s.kv_stride < s.Hkv * s.D) {
    throw std::invalid_argument("attention: bad shape B=" + std::to_string(s.B) +
                                " T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
                                " Hkv=" + std::to_string(s.Hkv) + " D=" + std::to_string(s.D) +
                                " strides " + std::to_string(s.q_stride) + "/" +
                                std::to_string(s.kv_stride));
  }
}

template <class T>
void forward(T* out, T* lse, const T* q, const T* k, const T* v, const AttentionShape& s) {
  validate(s);
  if (s.doc) {
    attention_block_forward(out, lse, q, k, v, block_of_shape(s));
    return;
  }
  const int tasks = s.B * s.H;
#pragma omp parallel for schedule(static)
  for (int task = 0; task < tasks; ++task) {
    forward_head(out, lse, q, k, v, s, task / s.H, task % s.H);
  }
}

// dS = P o (dP - D_i) over each row's visible columns, exactly 0 elsewhere (a diagonal tile's
// dP may hold stale values past them); dP is overwritten.
template <class T>
FF_WIDE void score_grad(T* dP, const T* P, const T* Dd, int rows4, const int* ncols) {
  for (int r = 0; r < rows4; ++r) {
    T* g = dP + r * kTile;
    const T* p = P + r * kTile;
    const int n = ncols[r];
    const T dr = Dd[r];
#pragma omp simd
    for (int c = 0; c < kTile; ++c) g[c] = c < n ? p[c] * (g[c] - dr) : T(0);
  }
}

// FlashAttention-2 backward for one (batch, KV head): key tiles outer, query tiles inner, every
// query head of the group in turn, so dK and dV of this KV head are summed here in a fixed order
// and written once; no other task touches them, nor this group's dq columns.
template <class T>
FF_WIDE void backward_group(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                            const T* out, const T* lse, const AttentionShape& s, int b, int kvh) {
  const Geometry g(s);
  const int Dp = g.Dp, Tp = g.Tp;
  const size_t plane = static_cast<size_t>(Tp) * Dp;
  T* Kt = detail::thread_scratch<T>(8 * plane + 2 * static_cast<size_t>(Tp) + 2 * kTile * kTile);
  T* Kp = Kt + plane;   // (Tp, Dp)
  T* Vt = Kp + plane;   // (Dp, Tp)
  T* dK = Vt + plane;   // (Tp, Dp) gradient wrt K, summed over the group's query heads
  T* dV = dK + plane;   // (Tp, Dp)
  T* Qs = dV + plane;   // (Tp, Dp) scaled queries, exactly as the forward used them
  T* dOp = Qs + plane;  // (Tp, Dp)
  T* dQ = dOp + plane;  // (Tp, Dp) gradient wrt the scaled queries
  T* L = dQ + plane;    // (Tp) log-sum-exp per query
  T* Dd = L + Tp;       // (Tp) D_i = rowsum(dO o O)
  T* P = Dd + Tp;       // (kTile, kTile)
  T* dS = P + kTile * kTile;
  int ncols[kTile];

  const T scale = T(1) / std::sqrt(T(s.D));
  const size_t row0 = static_cast<size_t>(b) * s.T;
  const size_t kv_off = row0 * s.kv_stride + static_cast<size_t>(kvh) * s.D;
  pack_transposed(Kt, Tp, k + kv_off, s.kv_stride, s.T, s.D, Dp);
  pack_rows(Kp, Dp, k + kv_off, s.kv_stride, s.T, s.D, Tp, T(1));
  pack_transposed(Vt, Tp, v + kv_off, s.kv_stride, s.T, s.D, Dp);
  for (size_t e = 0; e < 2 * plane; ++e) dK[e] = 0;

  const int group = s.H / s.Hkv;
  const size_t o_stride = static_cast<size_t>(s.H) * s.D;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    const size_t q_off = row0 * s.q_stride + static_cast<size_t>(h) * s.D;
    const size_t o_off = row0 * o_stride + static_cast<size_t>(h) * s.D;
    pack_rows(Qs, Dp, q + q_off, s.q_stride, s.T, s.D, Tp, scale);
    pack_rows(dOp, Dp, dout + o_off, o_stride, s.T, s.D, Tp, T(1));
    for (size_t e = 0; e < plane; ++e) dQ[e] = 0;
    const T* lse_h = lse + (static_cast<size_t>(b) * s.H + h) * s.T;
    for (int t = 0; t < Tp; ++t) {
      T acc = 0;
      if (t < s.T) {
        const T* o = out + o_off + t * o_stride;
        const T* d = dout + o_off + t * o_stride;
#pragma omp simd reduction(+ : acc)
        for (int c = 0; c < s.D; ++c) acc += d[c] * o[c];
      }
      Dd[t] = acc;
      L[t] = t < s.T ? lse_h[t] : T(0);
    }
    for (int j = 0; j < g.nt; ++j) {
      const int keys4 = round4(std::min(kTile, s.T - j * kTile));
      const size_t kj = static_cast<size_t>(j) * kTile * Dp;
      for (int i = j; i < g.nt; ++i) {
        const bool diag = i == j;
        const int rows = std::min(kTile, s.T - i * kTile);
        const int rows4 = round4(rows);
        const size_t qi = static_cast<size_t>(i) * kTile * Dp;
        const Band lower = diag ? Band::kLower : Band::kFull;
        const Band upper = diag ? Band::kUpper : Band::kFull;
        causal_columns(ncols, rows, rows4, diag);
        attn::tile_abt(Qs + qi, Dp, Kt + j * kTile, Tp, Dp, P, rows4, diag);
        attn::probabilities(P, L + i * kTile, rows4, ncols, nullptr, T(1));
        attn::tile_acc(dV + kj, Dp, P, 1, kTile, dOp + qi, Dp, Dp, keys4, rows4, upper);
        attn::tile_abt(dOp + qi, Dp, Vt + j * kTile, Tp, Dp, dS, rows4, diag);
        score_grad(dS, P, Dd + i * kTile, rows4, ncols);
        attn::tile_acc(dQ + qi, Dp, dS, kTile, 1, Kp + kj, Dp, Dp, rows4, keys4, lower);
        attn::tile_acc(dK + kj, Dp, dS, 1, kTile, Qs + qi, Dp, Dp, keys4, rows4, upper);
      }
    }
    for (int t = 0; t < s.T; ++t) {
      T* d = dq + q_off + t * static_cast<size_t>(s.q_stride);
      const T* src = dQ + static_cast<size_t>(t) * Dp;
      for (int c = 0; c < s.D; ++c) d[c] += scale * src[c];
    }
  }
  for (int t = 0; t < s.T; ++t) {
    const size_t off = kv_off + t * static_cast<size_t>(s.kv_stride);
    for (int c = 0; c < s.D; ++c) {
      dk[off + c] += dK[static_cast<size_t>(t) * Dp + c];
      dv[off + c] += dV[static_cast<size_t>(t) * Dp + c];
    }
  }
}

template <class T>
void backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const AttentionShape& s) {
  validate(s);
  if (s.doc) {
    attention_block_backward(dq, dk, dv, dout, q, k, v, out, lse, block_of_shape(s));
    return;
  }
  const int tasks = s.B * s.Hkv;
#pragma omp parallel for schedule(static)
  for (int task = 0; task < tasks; ++task) {
    backward_group(dq, dk, dv, dout, q, k, v, out, lse, s, task / s.Hkv, task % s.Hkv);
  }
}

}  // namespace

namespace FF_ISA_TAG {
extern const FlashAttentionTier flash_attention_tier;
const FlashAttentionTier flash_attention_tier = {&forward<float>, &backward<float>};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(FlashAttentionTier, flash_attention_tier)

AttentionBlock block_of_shape(const AttentionShape& s) {
  AttentionBlock b = contiguous_block(s.B, s.T, s.T, s.H, s.Hkv, s.D, s.q_stride, s.kv_stride);
  b.q_doc = b.k_doc = s.doc;
  b.q_doc_batch = b.k_doc_batch = s.T;
  b.tiles = s.tiles;
  return b;
}

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s) {
  flash_attention_tier_for_cpu().forward(out, lse, q, k, v, s);
}
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const AttentionShape& s) {
  flash_attention_tier_for_cpu().backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}
void attention_forward(double* out, double* lse, const double* q, const double* k, const double* v,
                       const AttentionShape& s) {
  forward(out, lse, q, k, v, s);
}
void attention_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                        const double* k, const double* v, const double* out, const double* lse,
                        const AttentionShape& s) {
  backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
