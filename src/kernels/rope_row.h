#pragma once
// Internal to the kernels that apply RoPE (rope.cpp, and flash_attention_bf16.cpp, whose backward
// can hand a bf16 GEMM q/k/v's gradient already rotated back and rounded): the one body that
// rotates a row's heads, so every caller gets the very same products.
#include <cstddef>

#include "kernels/isa_tier.h"
#include "kernels/round_store.h"

namespace ff::rope_detail {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

// Rotate-half of one row's `heads` heads: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), into y
// (x itself, or a 16-bit copy through Store). The backward applies the transpose, i.e. the same
// rotation with sin negated.
template <class T, class Store = detail::StoreSame<T>>
inline void rotate_row(typename Store::type* y, const T* x, const T* c, const T* s, int heads, int D, T sign) {
  const int half = D / 2;
  for (int h = 0; h < heads; ++h) {
    const T* x1 = x + static_cast<size_t>(h) * D;
    const T* x2 = x1 + half;
    typename Store::type* y1 = y + static_cast<size_t>(h) * D;
    typename Store::type* y2 = y1 + half;
#pragma omp simd
    for (int i = 0; i < half; ++i) {
      const T a = x1[i], b = x2[i], si = sign * s[i];
      y1[i] = Store::cast(a * c[i] - b * si);
      y2[i] = Store::cast(b * c[i] + a * si);
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::rope_detail
