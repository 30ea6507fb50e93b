#pragma once
// Internal to flash_attention.cpp: copying q/k/v rows into padded tile-friendly scratch, and
// prefetching the rows the next tiles will read. Those rows sit a whole fused-qkv row apart
// (kilobytes), so each one is on a new page where the hardware prefetcher does not follow, and
// without help the copies stall on memory for a large part of the kernel's time.
#include <algorithm>
#include <cstddef>

#include "kernels/simd.h"

namespace ff::attn {

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

// Walks a short list of strided row ranges, issuing L2 prefetches for a given number of rows
// per call, so the traffic is spread over the tile products that hide it.
class RowPrefetcher {
 public:
  // `for_write` asks for the lines in exclusive state, for rows about to be accumulated into.
  template <class T>
  void add(const T* base, size_t stride, int rows, int cols, bool for_write = false) {
    if (n_ == kMaxStreams || rows <= 0) return;
    streams_[n_++] = {reinterpret_cast<const char*>(base), stride * sizeof(T), rows,
                      static_cast<int>(cols * sizeof(T)), for_write};
    total_ += rows;
  }
  int total_rows() const { return total_; }
  void step(int rows) {
    for (; rows > 0 && cur_ < n_; --rows) {
      const Stream& s = streams_[cur_];
      const char* p = s.base + row_ * s.stride;
      if (s.for_write) {
        for (int off = 0; off < s.bytes; off += 64) __builtin_prefetch(p + off, 1, 2);
        __builtin_prefetch(p + s.bytes - 1, 1, 2);
      } else {
        for (int off = 0; off < s.bytes; off += 64) __builtin_prefetch(p + off, 0, 2);
        __builtin_prefetch(p + s.bytes - 1, 0, 2);  // the row need not start on a line
      }
      if (++row_ == s.rows) {
        row_ = 0;
        ++cur_;
      }
    }
  }

 private:
  struct Stream {
    const char* base;
    size_t stride;
    int rows, bytes;
    bool for_write;
  };
  static constexpr int kMaxStreams = 8;
  Stream streams_[kMaxStreams];
  int n_ = 0, cur_ = 0, row_ = 0, total_ = 0;
};

}  // namespace ff::attn
