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

// The element type and the lane count of a GCC vector type (Vec, Reg).
template <class V>
using LaneOf = std::remove_cvref_t<decltype(std::declval<V>()[0])>;
template <class V>
constexpr int kLanesOf = int(sizeof(V) / sizeof(LaneOf<V>));

namespace detail {
template <class T>
using LaneIndex = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <class V>
struct MaskOf {
  typedef LaneIndex<LaneOf<V>> type __attribute__((vector_size(sizeof(V))));
};
// Lane j of the 2x2 block swap at block size b: from the first row when bit b of j is clear,
// else from the second (indices L..2L-1 for L lanes). "high" builds the partner row.
template <class V, int b, bool high, size_t... J>
constexpr typename MaskOf<V>::type swap_mask(std::index_sequence<J...>) {
  constexpr size_t L = kLanesOf<V>;
  return typename MaskOf<V>::type{static_cast<LaneIndex<LaneOf<V>>>(
      (J & b) == 0 ? (high ? J + b : J) : (high ? L + J : L + J - b))...};
}
template <class V, int b>
inline void swap_blocks(V* r) {
  constexpr auto lo = swap_mask<V, b, false>(std::make_index_sequence<kLanesOf<V>>{});
  constexpr auto hi = swap_mask<V, b, true>(std::make_index_sequence<kLanesOf<V>>{});
  for (int i = 0; i < kLanesOf<V>; ++i) {
    if (i & b) continue;
    const V a = r[i], c = r[i + b];
    r[i] = __builtin_shuffle(a, c, lo);
    r[i + b] = __builtin_shuffle(a, c, hi);
  }
}
// dst = src^T for one square block of a register's lane count L (row strides lds, ldd).
// Transposing [[A, B], [C, D]] swaps B and C and transposes each block, so swapping the
// off-diagonal blocks at sizes L/2, ..., 2, 1 is a full transpose.
template <class V, class T>
inline void transpose_block(const T* src, size_t lds, T* dst, size_t ldd) {
  constexpr int L = kLanesOf<V>;
  V r[L];
  for (int i = 0; i < L; ++i) r[i] = load_as<V>(src + i * lds);
  [&]<int... B>(std::integer_sequence<int, B...>) {
    (swap_blocks<V, (L >> (B + 1))>(r), ...);
  }(std::make_integer_sequence<int, std::bit_width(unsigned(L)) - 1>{});
  for (int i = 0; i < L; ++i) store(dst + i * ldd, r[i]);
}
}  // namespace detail

// dst (16 x 16, row stride ldd) = src^T (row stride lds) by register shuffles: 64 two-register
// shuffles for one 16-lane register, instead of 256 scattered scalar stores. Where a register
// holds fewer lanes (AVX2), the 16 x 16 block is transposed as sub-blocks of the register's width,
// each landing at its mirrored place: a 16-lane Vec there would go through the stack.
template <class T>
inline void transpose16(const T* src, size_t lds, T* dst, size_t ldd) {
  constexpr int L = kRegLanes<T>;
  for (int bi = 0; bi < kLanes; bi += L)
    for (int bj = 0; bj < kLanes; bj += L)
      detail::transpose_block<Reg<T>>(src + bi * lds + bj, lds, dst + bj * ldd + bi, ldd);
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

// exp_fast on every lane of a Vec or a Reg. A loop over one register's lanes becomes vector code
// (the ymm form on AVX2); over a Vec wider than the registers GCC goes through the stack. With
// AVX-512 the float Vec does the rounding and the 2^n scaling in one instruction each
// (vrndscaleps, vscalefps), about half the instructions of the auto-vectorized scalar code;
// softmax tiles spend much of their time here.
template <class V>
inline V exp_vec(const V& x) {
  V y;
  for (int i = 0; i < kLanesOf<V>; ++i) y[i] = exp_fast(x[i]);
  return y;
}
#if FF_ISA_LEVEL >= 1  // AVX-512 (isa_tier.h)
// The masked forms with an explicit source (all lanes enabled) are used throughout: the plain
// intrinsics pass an undefined register through, which GCC 12 reports as uninitialized.
template <>
inline Vec<float> exp_vec<Vec<float>>(const Vec<float>& xv) {
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
template <class V>
inline LaneOf<V> reduce_max(const V& v) {
  LaneOf<V> a[kLanesOf<V>];
  std::memcpy(a, &v, sizeof a);
#pragma GCC unroll 4
  for (int w = kLanesOf<V> / 2; w > 0; w /= 2)
#pragma GCC unroll 8
    for (int i = 0; i < w; ++i) a[i] = a[i + w] > a[i] ? a[i + w] : a[i];
  return a[0];
}
template <class V>
inline LaneOf<V> reduce_add(const V& v) {
  LaneOf<V> a[kLanesOf<V>];
  std::memcpy(a, &v, sizeof a);
#pragma GCC unroll 4
  for (int w = kLanesOf<V> / 2; w > 0; w /= 2)
#pragma GCC unroll 8
    for (int i = 0; i < w; ++i) a[i] += a[i + w];
  return a[0];
}

}  // namespace FF_ISA_TAG
}  // namespace ff::simd
