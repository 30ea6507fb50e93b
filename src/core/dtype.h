#pragma once
// Element types the engine knows, and the typed pointers that cross every seam where the
// precision may differ from one buffer to the next (DESIGN principle 17: precision is a property
// of a buffer, not of the code). Training math is fp32 today; bf16/f16 exist for storage, export,
// communication and the mixed-precision work to come.
#include <cstdint>
#include <cstring>
#include <string>
#include <stdexcept>

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
