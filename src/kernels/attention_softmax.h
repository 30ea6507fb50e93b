#pragma once
// Internal to the attention kernels (flash_attention.cpp and attention_block.cpp in fp32/fp64,
// flash_attention_bf16.cpp): the fp32 softmax steps on a 64 x 64 score tile whose row r sees
// columns [cbeg[r], ncols[r]) (cbeg null: from 0; a document mask starts a row's range later).
// The score is s * scale: the fp32 kernels pre-scale their queries and
// pass 1 (x * 1 is x exactly, so their results do not change); the bf16 kernel keeps its queries
// as given (a pre-scaled bf16 query would be rounded twice) and scales the fp32 scores here.
#include <cstddef>
#include <limits>

#include "kernels/simd.h"

namespace ff::attn {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

constexpr int kSoftmaxTile = 64;

// A document-masked tile from key j0: row r's first visible column cbeg[r] from its first visible
// key kbeg[r] (ncols[r] its end, as the mask gives it). False when no row sees any column: the
// tile is skipped.
inline bool document_columns(const int* kbeg, int j0, int rows4, const int* ncols, int* cbeg) {
  bool any = false;
  for (int r = 0; r < rows4; ++r) {
    const int c = kbeg[r] - j0;
    cbeg[r] = c < 0 ? 0 : (c > kSoftmaxTile ? kSoftmaxTile : c);
    any = any || ncols[r] > cbeg[r];
  }
  return any;
}

// One online-softmax step: S becomes the probabilities relative to the running max m; O and l
// are rescaled to it. A row that sees nothing in this tile keeps its state and gets zero
// probabilities. Columns past ncols are selected away, never multiplied by 0 (they may hold
// stale values, even NaN, that a product was allowed to skip).
template <class T>
FF_WIDE void masked_online_softmax(T* S, T* m, T* l, T* O, int Dp, int rows4, const int* ncols, const int* cbeg,
                                   T scale) {
  // Register-wide vectors (simd::Reg): a 16-lane Vec would go through the stack on AVX2.
  using simd::kRegLanes;
  using R = simd::Reg<T>;
  constexpr int kTile = kSoftmaxTile, nv = kTile / kRegLanes<T>;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  R lane;
  for (int i = 0; i < kRegLanes<T>; ++i) lane[i] = T(i);
  for (int r = 0; r < rows4; ++r) {
    T* s = S + r * kTile;
    const T nc = T(ncols[r]);
    const int first = cbeg ? cbeg[r] : 0;
    const T cb = T(first);
    if (ncols[r] <= first) {
      for (int c = 0; c < kTile; ++c) s[c] = 0;
      continue;
    }
    R x[nv];
    for (int v = 0; v < nv; ++v) {
      x[v] = simd::load_as<R>(s + v * kRegLanes<T>) * scale;
      const R col = lane + T(v * kRegLanes<T>);
      x[v] = ((col < nc) & (col >= cb)) ? x[v] : neg_inf;
    }
    R mv = x[0];
    for (int v = 1; v < nv; ++v) mv = x[v] > mv ? x[v] : mv;
    const T mx = simd::reduce_max(mv);
    const T mnew = mx > m[r] ? mx : m[r];
    const T alpha = m[r] == neg_inf ? T(0) : simd::exp_fast(m[r] - mnew);
    R sum{};
    for (int v = 0; v < nv; ++v) {
      const R e = simd::exp_vec(x[v] - mnew);
      const R col = lane + T(v * kRegLanes<T>);
      const R p = ((col < nc) & (col >= cb)) ? e : T(0);
      simd::store(s + v * kRegLanes<T>, p);
      sum += p;
    }
    l[r] = l[r] * alpha + simd::reduce_add(sum);
    m[r] = mnew;
    T* o = O + static_cast<size_t>(r) * Dp;
#pragma omp simd
    for (int d = 0; d < Dp; ++d) o[d] *= alpha;
  }
}

// P = exp(S scale - L) over the visible columns [cbeg, ncols) of each row, exactly 0 elsewhere.
template <class T>
FF_WIDE void probabilities(T* P, const T* L, int rows4, const int* ncols, const int* cbeg, T scale) {
  using simd::kRegLanes;
  using R = simd::Reg<T>;
  constexpr int kTile = kSoftmaxTile, nv = kTile / kRegLanes<T>;
  R lane;
  for (int i = 0; i < kRegLanes<T>; ++i) lane[i] = T(i);
  for (int r = 0; r < rows4; ++r) {
    T* p = P + r * kTile;
    const T nc = T(ncols[r] > 0 ? ncols[r] : 0), cb = T(cbeg ? cbeg[r] : 0);
    for (int v = 0; v < nv; ++v) {
      const R e = simd::exp_vec(simd::load_as<R>(p + v * kRegLanes<T>) * scale - L[r]);
      const R col = lane + T(v * kRegLanes<T>);
      simd::store(p + v * kRegLanes<T>, ((col < nc) & (col >= cb)) ? e : T(0));
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn
