#pragma once
// Reading and writing fixed-width fields of on-disk headers. memcpy keeps it free of alignment
// and aliasing traps; the formats are little-endian, as is every machine fivefold builds for.
#include <cstddef>
#include <cstring>

namespace ff::detail {

template <typename T>
void put_field(unsigned char* dst, size_t at, T v) {
  std::memcpy(dst + at, &v, sizeof(T));
}

template <typename T>
T get_field(const unsigned char* src, size_t at) {
  T v;
  std::memcpy(&v, src + at, sizeof(T));
  return v;
}

}  // namespace ff::detail
