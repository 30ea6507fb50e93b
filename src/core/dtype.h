#pragma once
// Element types the engine knows, and the typed pointers that cross every seam where the
// precision may differ from one buffer to the next (principle 17, docs/principles.md: precision is
// a property of a buffer, not of the code). Training math is fp32 today; bf16/f16 exist for
// storage, export, communication and the mixed-precision work to come.
#include <cstdint>
#include <cstring>
#include <string>
#include <stdexcept>

#include "core/enum_table.h"

namespace ff {

enum class DType : uint32_t { f32 = 0, bf16 = 1, f16 = 2 };

inline size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
  }
  return "?";
}

// How config keys and command-line options spell a dtype: fp32 | bf16 | fp16, the words of the
// `precision` key (dtype_name's f32 and f16 are the checkpoint files' spelling). A key that takes
// only some dtypes uses subset().
inline const EnumTable<DType>& dtype_option_names() {
  static const EnumTable<DType> names{{DType::f32, "fp32"}, {DType::bf16, "bf16"}, {DType::f16, "fp16"}};
  return names;
}

// Round-to-nearest-even, the conversion PyTorch uses, so exported bf16 weights match.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16, round-to-nearest-even, in integer arithmetic so the result does not depend on
// the instruction set (F16C) or the floating-point environment. Overflow goes to inf, values
// below half the smallest subnormal (2^-25) to signed zero, NaNs stay quiet NaNs.
inline uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN, quiet
  // 65520 = halfway between the largest half (65504) and 2^16: it and above round to inf.
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // normal half (>= 2^-14): rebias 127 -> 15, drop 13 bits with RNE
    const uint32_t r = a - (uint32_t(127 - 15) << 23);
    return uint16_t(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  // Subnormal half: the value in units of 2^-24 is mantissa * 2^(exponent - 126), exponent <= 112,
  // so the shift is at least 14. A carry out of the 10 mantissa bits yields 0x400, which is
  // exactly the encoding of the smallest normal.
  const uint32_t exponent = a >> 23;
  const uint32_t shift = 126 - exponent;
  if (exponent == 0 || shift > 24) return sign;  // below 2^-25: rounds to zero
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return uint16_t(sign | q);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t u;
  if (exponent == 0x1f) {
    u = sign | 0x7f800000u | (mantissa << 13);  // inf, or NaN with its payload (quiet bit kept)
  } else if (exponent != 0) {
    u = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    u = sign;
  } else {  // subnormal half: normalise, every one is a normal float
    exponent = 127 - 15 + 1;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --exponent;
    }
    u = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline void check_dtype(DType have, DType want, const char* where) {
  if (have != want)
    throw std::logic_error(std::string(where) + ": a " + dtype_name(have) + " buffer where " +
                           dtype_name(want) + " is expected");
}

// A pointer with its element type. Built implicitly from a float* so fp32 call sites read as
// before; code that has only an fp32 kernel asks for f32(), which refuses any other type loudly
// instead of reinterpreting its bytes.
class ConstTypedPtr {
 public:
  ConstTypedPtr() = default;
  ConstTypedPtr(const float* p) : data_(p), dtype_(DType::f32) {}
  ConstTypedPtr(const void* p, DType t) : data_(p), dtype_(t) {}
  const void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  explicit operator bool() const { return data_ != nullptr; }
  const float* f32() const {
    check_dtype(dtype_, DType::f32, "ConstTypedPtr::f32");
    return static_cast<const float*>(data_);
  }
  // The pointer `elements` elements further on.
  ConstTypedPtr at(size_t elements) const {
    return {static_cast<const char*>(data_) + elements * dtype_size(dtype_), dtype_};
  }

 private:
  const void* data_ = nullptr;
  DType dtype_ = DType::f32;
};

class TypedPtr {
 public:
  TypedPtr() = default;
  TypedPtr(float* p) : data_(p), dtype_(DType::f32) {}
  TypedPtr(void* p, DType t) : data_(p), dtype_(t) {}
  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  explicit operator bool() const { return data_ != nullptr; }
  float* f32() const {
    check_dtype(dtype_, DType::f32, "TypedPtr::f32");
    return static_cast<float*>(data_);
  }
  TypedPtr at(size_t elements) const {
    return {static_cast<char*>(data_) + elements * dtype_size(dtype_), dtype_};
  }
  operator ConstTypedPtr() const { return {data_, dtype_}; }

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
};

}  // namespace ff
