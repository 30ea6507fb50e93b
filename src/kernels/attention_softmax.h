#pragma once
// Internal to the block attention kernels (attention_block.cpp in fp32/fp64, and
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
  constexpr int kTile = kSoftmaxTile, nv = kTile / simd::kLanes;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  simd::Vec<T> lane;
  for (int i = 0; i < simd::kLanes; ++i) lane[i] = T(i);
  for (int r = 0; r < rows4; ++r) {
    T* s = S + r * kTile;
    const T nc = T(ncols[r]);
    const int first = cbeg ? cbeg[r] : 0;
    const T cb = T(first);
    if (ncols[r] <= first) {
      for (int c = 0; c < kTile; ++c) s[c] = 0;
      continue;
    }
    simd::Vec<T> x[nv];
    for (int v = 0; v < nv; ++v) {
      x[v] = simd::load(s + v * simd::kLanes) * scale;
      const simd::Vec<T> col = lane + T(v * simd::kLanes);
      x[v] = ((col < nc) & (col >= cb)) ? x[v] : neg_inf;
    }
    simd::Vec<T> mv = x[0];
    for (int v = 1; v < nv; ++v) mv = x[v] > mv ? x[v] : mv;
    const T mx = simd::reduce_max<T>(mv);
    const T mnew = mx > m[r] ? mx : m[r];
    const T alpha = m[r] == neg_inf ? T(0) : simd::exp_fast(m[r] - mnew);
    simd::Vec<T> sum{};
    for (int v = 0; v < nv; ++v) {
      const simd::Vec<T> e = simd::exp_vec<T>(x[v] - mnew);
      const simd::Vec<T> col = lane + T(v * simd::kLanes);
      const simd::Vec<T> p = ((col < nc) & (col >= cb)) ? e : T(0);
      simd::store(s + v * simd::kLanes, p);
      sum += p;
    }
    l[r] = l[r] * alpha + simd::reduce_add<T>(sum);
    m[r] = mnew;
    T* o = O + static_cast<size_t>(r) * Dp;
    for (int d = 0; d < Dp; ++d) o[d] *= alpha;
  }
}

// P = exp(S scale - L) over the visible columns [cbeg, ncols) of each row, exactly 0 elsewhere.
template <class T>
FF_WIDE void probabilities(T* P, const T* L, int rows4, const int* ncols, const int* cbeg, T scale) {
  constexpr int kTile = kSoftmaxTile, nv = kTile / simd::kLanes;
  simd::Vec<T> lane;
  for (int i = 0; i < simd::kLanes; ++i) lane[i] = T(i);
  for (int r = 0; r < rows4; ++r) {
    T* p = P + r * kTile;
    const T nc = T(ncols[r] > 0 ? ncols[r] : 0), cb = T(cbeg ? cbeg[r] : 0);
    for (int v = 0; v < nv; ++v) {
      const simd::Vec<T> e = simd::exp_vec<T>(simd::load(p + v * simd::kLanes) * scale - L[r]);
      const simd::Vec<T> col = lane + T(v * simd::kLanes);
      simd::store(p + v * simd::kLanes, ((col < nc) & (col >= cb)) ? e : T(0));
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn
