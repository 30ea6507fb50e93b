#include "io/checksum.h"

#include <bit>
#include <cstring>

namespace ff {

namespace {

// Odd, so multiplying is invertible; the golden-ratio constant spreads bits well.
constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

// The rotate feeds high bits back into low ones, which a bare multiply never does.
inline uint64_t step(uint64_t h, uint64_t word) { return std::rotl((h ^ word) * kMul, 31); }

// SplitMix64's finalizer: a bijection, so it cannot hide a difference between lanes.
inline uint64_t avalanche(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

inline uint64_t load64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);  // unaligned-safe; compiles to one load
  return w;
}

}  // namespace

uint64_t checksum64(const void* data, size_t bytes) {
  static_assert(std::endian::native == std::endian::little,
                "checksums and file formats assume a little-endian host");
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lane[4] = {0xCBF29CE484222325ull, 0x84222325CBF29CE4ull, 0x6A09E667F3BCC908ull,
                      0xBB67AE8584CAA73Bull};
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    lane[0] = step(lane[0], load64(p + i));
    lane[1] = step(lane[1], load64(p + i + 8));
    lane[2] = step(lane[2], load64(p + i + 16));
    lane[3] = step(lane[3], load64(p + i + 24));
  }
  for (; i + 8 <= bytes; i += 8) lane[0] = step(lane[0], load64(p + i));
  if (i < bytes) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, bytes - i);
    lane[1] = step(lane[1], w);
  }
  uint64_t h = avalanche(uint64_t(bytes));
  for (uint64_t l : lane) h = step(h, avalanche(l));
  return avalanche(h);
}

}  // namespace ff
