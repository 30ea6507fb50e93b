#pragma once
// Element types the engine knows. Training math is fp32 today; bf16/f16 exist for storage,
// export and the mixed-precision work to come.
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

}  // namespace ff
