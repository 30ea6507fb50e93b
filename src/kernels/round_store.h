#pragma once
// Internal to the kernels layer: elementwise kernels that write a tensor straight into a 16-bit
// type (an activation stored 16-bit, model/activations.h) store each fp32 result through these,
// and read a 16-bit input through the loads below. They round exactly as convert_from_f32 does (round-to-nearest-even, subnormals kept,
// NaN stays NaN), so a kernel writing bf16 gives the bits of its fp32 output converted after.
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/isa_tier.h"

namespace ff::detail {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

// Branch-free, so a simd loop storing through it stays vectorised.
inline uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// One output element type: the arithmetic's own (a plain store), or a 16-bit type's bits.
template <class T>
struct StoreSame {
  using type = T;
  static T cast(T v) { return v; }
};
using StoreF32 = StoreSame<float>;
struct StoreBf16 {
  using type = uint16_t;
  static uint16_t cast(float v) { return bf16_bits(v); }
};
struct StoreF16 {
  using type = uint16_t;
  static uint16_t cast(float v) { return f32_to_f16(v); }
};

// One input element type: the arithmetic's own, or a 16-bit type widened (exactly) on the load.
template <class T>
struct LoadSame {
  using type = T;
  static T get(T v) { return v; }
};
struct LoadBf16 {
  using type = uint16_t;
  static float get(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
struct LoadF16 {
  using type = uint16_t;
  static float get(uint16_t h) { return f16_to_f32(h); }
};

// Calls f.template operator()<Load>(p) with the load of x's type and x's typed pointer.
template <class F>
void with_load(ConstTypedPtr x, F&& f) {
  switch (x.dtype()) {
    case DType::f32: f.template operator()<LoadSame<float>>(static_cast<const float*>(x.data())); return;
    case DType::bf16: f.template operator()<LoadBf16>(static_cast<const uint16_t*>(x.data())); return;
    case DType::f16: f.template operator()<LoadF16>(static_cast<const uint16_t*>(x.data())); return;
  }
}

// Calls f.template operator()<Store>(p) with the store of y's type and y's typed pointer.
template <class F>
void with_store(TypedPtr y, F&& f) {
  switch (y.dtype()) {
    case DType::f32: f.template operator()<StoreF32>(static_cast<float*>(y.data())); return;
    case DType::bf16: f.template operator()<StoreBf16>(static_cast<uint16_t*>(y.data())); return;
    case DType::f16: f.template operator()<StoreF16>(static_cast<uint16_t*>(y.data())); return;
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::detail
