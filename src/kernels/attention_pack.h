#pragma once
// Internal to flash_attention.cpp: copying q/k/v rows into zero-padded scratch laid out for
// the tile products. (Software prefetching of the next rows was tried and measured slower.)
#include <algorithm>
#include <cstddef>

#include "kernels/simd.h"

namespace ff::attn {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

// dst (rows_pad x ld_dst) = scale * src (rows x cols), zero elsewhere: padding keeps the tile
// loops free of edge cases and contributes exact zeros to every product.
template <class T>
inline void pack_rows(T* dst, int ld_dst, const T* src, size_t ld_src, int rows, int cols,
                      int rows_pad, T scale) {
  for (int r = 0; r < rows_pad; ++r) {
    T* d = dst + static_cast<size_t>(r) * ld_dst;
    const T* s = src + r * ld_src;
    const int n = r < rows ? cols : 0;
    for (int c = 0; c < n; ++c) d[c] = s[c] * scale;
    for (int c = n; c < ld_dst; ++c) d[c] = T(0);
  }
}

// dst (cols_pad x ld_dst) = src (rows x cols)^T, zero elsewhere. Whole 16 x 16 blocks go
// through register shuffles; a scalar transpose cost a quarter of the forward's time.
template <class T>
inline void pack_transposed(T* dst, int ld_dst, const T* src, size_t ld_src, int rows, int cols,
                            int cols_pad) {
  constexpr int kB = simd::kLanes;
  for (int r0 = 0; r0 < rows; r0 += kB) {
    const int nr = std::min(kB, rows - r0);
    for (int c0 = 0; c0 < cols; c0 += kB) {
      const int nc = std::min(kB, cols - c0);
      T* d = dst + static_cast<size_t>(c0) * ld_dst + r0;
      const T* s = src + r0 * ld_src + c0;
      if (nr == kB && nc == kB) {
        simd::transpose16(s, ld_src, d, ld_dst);
        continue;
      }
      for (int r = 0; r < nr; ++r)
        for (int c = 0; c < nc; ++c) d[static_cast<size_t>(c) * ld_dst + r] = s[r * ld_src + c];
    }
  }
  for (int c = 0; c < cols_pad; ++c) {
    T* d = dst + static_cast<size_t>(c) * ld_dst;
    for (int r = c < cols ? rows : 0; r < ld_dst; ++r) d[r] = T(0);
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn
