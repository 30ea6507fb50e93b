#include "io/corpus/utf8.h"

#include <cstdint>
#include <cstring>

namespace ff {

size_t invalid_utf8_offset(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Corpora are mostly ASCII: eight bytes at a time while no high bit is set.
    for (uint64_t w; i + 8 <= n; i += 8) {
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
    }
    if (i == n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t lo = 0x80, hi = 0xBF;  // range of the second byte (RFC 3629's table)
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;       // overlong
      if (c == 0xED) hi = 0x9F;       // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;       // overlong
      if (c == 0xF4) hi = 0x8F;       // past U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace ff
