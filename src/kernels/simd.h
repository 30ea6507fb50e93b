#pragma once
// Internal to the kernels layer: a 16-lane vector type (GCC vector extensions) for the
// hand-blocked tile loops, a 16 x 16 register transpose, horizontal reductions, and an exp that
// vectorizes. glibc's vector expf is only declared under -ffast-math, which would also license
// reassociation and finite-math assumptions in every kernel that includes this.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#include "kernels/isa_tier.h"

// GCC's Sapphire Rapids tuning prefers 256-bit vectors for auto-vectorized loops; the tile
// loops of attention are compute bound and want full AVX-512 width.
#if defined(__GNUC__) && !defined(__clang__)
#define FF_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define FF_WIDE
#endif

namespace ff::simd {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

// 16 floats fill one AVX-512 register; 16 doubles take two, which the compiler splits.
constexpr int kLanes = 16;

template <class T>
struct VecOf {
  typedef T type __attribute__((vector_size(kLanes * sizeof(T))));
};
template <class T>
using Vec = typename VecOf<T>::type;

// The machine register the register-blocked tile products (attention_tiles.h,
// attention_bf16_tiles.h) accumulate in: 64 bytes with AVX-512, else 32 (AVX2). GCC lowers a
// 64-byte generic vector (Vec) on AVX2 through the stack, half a register at a time, so those
// products never hold one there. Their blocks are narrower there too: kBlockVecs 16-lane groups
// per block row. AVX-512 keeps a 4 x 64 block in 16 of its 32 registers; AVX2 has 16 registers
// of 8 floats, so its block is 4 x 16 (8 registers, 2 more for the row of B).
#if FF_ISA_LEVEL >= 1  // AVX-512 (isa_tier.h)
constexpr int kRegBytes = 64;
constexpr int kBlockVecs = 4;
#else
constexpr int kRegBytes = 32;
constexpr int kBlockVecs = 1;
#endif
template <class T>
struct RegOf {
  typedef T type __attribute__((vector_size(kRegBytes)));
};
template <class T>
using Reg = typename RegOf<T>::type;
template <class T>
constexpr int kRegLanes = kRegBytes / int(sizeof(T));

// Unaligned loads and stores: load of a Vec, load_as of any vector type (a kernel's own
// register-width type, attention_tiles.h), store of either.
template <class V, class T>
inline V load_as(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline Vec<T> load(const T* p) {
  return load_as<Vec<T>>(p);
}
template <class T, class V>
inline void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

namespace detail {
template <class T>
using LaneIndex = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <class T>
struct MaskOf {
  typedef LaneIndex<T> type __attribute__((vector_size(kLanes * sizeof(T))));
};
// Lane j of the 2x2 block swap at block size b: from the first row when bit b of j is clear,
// else from the second (indices 16..31). "high" builds the partner row.
template <class T, int b, bool high, size_t... J>
constexpr typename MaskOf<T>::type swap_mask(std::index_sequence<J...>) {
  return typename MaskOf<T>::type{static_cast<LaneIndex<T>>(
      (J & b) == 0 ? (high ? J + b : J) : (high ? kLanes + J : kLanes + J - b))...};
}
template <class T, int b>
inline void swap_blocks(Vec<T>* r) {
  constexpr auto lo = swap_mask<T, b, false>(std::make_index_sequence<kLanes>{});
  constexpr auto hi = swap_mask<T, b, true>(std::make_index_sequence<kLanes>{});
  for (int i = 0; i < kLanes; ++i) {
    if (i & b) continue;
    const Vec<T> a = r[i], c = r[i + b];
    r[i] = __builtin_shuffle(a, c, lo);
    r[i + b] = __builtin_shuffle(a, c, hi);
  }
}
}  // namespace detail

// dst (16 x 16, row stride ldd) = src^T (row stride lds). Transposing [[A, B], [C, D]] swaps B
// and C and transposes each block, so swapping off-diagonal blocks at sizes 8, 4, 2, 1 is a
// full transpose: 64 two-register shuffles instead of 256 scattered scalar stores.
template <class T>
inline void transpose16(const T* src, size_t lds, T* dst, size_t ldd) {
  Vec<T> r[kLanes];
  for (int i = 0; i < kLanes; ++i) r[i] = load(src + i * lds);
  detail::swap_blocks<T, 8>(r);
  detail::swap_blocks<T, 4>(r);
  detail::swap_blocks<T, 2>(r);
  detail::swap_blocks<T, 1>(r);
  for (int i = 0; i < kLanes; ++i) store(dst + i * ldd, r[i]);
}

// e^x in float to within 2 ulp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is
// exact), e^r from a degree-6 minimax polynomial, 2^n built in the exponent bits. Every step is
// a select or plain arithmetic, so loops calling it vectorize. Below -87.3 the result would be
// subnormal and is flushed to 0, which softmax wants for masked entries anyway.
inline float exp_fast(float x) {
  float t = x > 88.0f ? 88.0f : x;
  t = t < -87.3f ? -87.3f : t;
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a libm call.
  const float n = (t * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = t - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float y = p * std::bit_cast<float>(bits);
  return x < -87.3f ? 0.0f : y;
}
// The double instantiations are the finite-difference references: accuracy over speed.
inline double exp_fast(double x) { return std::exp(x); }

// exp_fast on all 16 lanes. With AVX-512 the float version does the rounding and the 2^n
// scaling in one instruction each (vrndscaleps, vscalefps), about half the instructions of the
// auto-vectorized scalar code; softmax tiles spend much of their time here.
template <class T>
inline Vec<T> exp_vec(const Vec<T>& x) {
  Vec<T> y;
  for (int i = 0; i < kLanes; ++i) y[i] = exp_fast(x[i]);
  return y;
}
#if FF_ISA_LEVEL >= 1  // AVX-512 (isa_tier.h)
// The masked forms with an explicit source (all lanes enabled) are used throughout: the plain
// intrinsics pass an undefined register through, which GCC 12 reports as uninitialized.
template <>
inline Vec<float> exp_vec<float>(const Vec<float>& xv) {
  constexpr __mmask16 all = 0xFFFF;
  const __m512 lo = _mm512_set1_ps(-87.3f);
  const __m512 x0 = reinterpret_cast<const __m512&>(xv);
  const __mmask16 tiny = _mm512_cmp_ps_mask(x0, lo, _CMP_LT_OQ);
  __m512 x = _mm512_mask_max_ps(x0, all, x0, lo);
  x = _mm512_mask_min_ps(x, all, x, _mm512_set1_ps(88.0f));
  const __m512 xl = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n =
      _mm512_mask_roundscale_ps(xl, all, xl, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  p = _mm512_mask_scalef_ps(p, all, p, n);
  const __m512 y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), p);
  return reinterpret_cast<const Vec<float>&>(y);
}
#endif

// Horizontal reductions as a halving tree: a lane-by-lane chain would be 15 dependent
// operations, which is what a softmax row would then wait on.
template <class T>
inline T reduce_max(const Vec<T>& v) {
  T a[kLanes];
  std::memcpy(a, &v, sizeof a);
#pragma GCC unroll 4
  for (int w = kLanes / 2; w > 0; w /= 2)
#pragma GCC unroll 8
    for (int i = 0; i < w; ++i) a[i] = a[i + w] > a[i] ? a[i + w] : a[i];
  return a[0];
}
template <class T>
inline T reduce_add(const Vec<T>& v) {
  T a[kLanes];
  std::memcpy(a, &v, sizeof a);
#pragma GCC unroll 4
  for (int w = kLanes / 2; w > 0; w /= 2)
#pragma GCC unroll 8
    for (int i = 0; i < w; ++i) a[i] += a[i + w];
  return a[0];
}

}  // namespace FF_ISA_TAG
}  // namespace ff::simd
