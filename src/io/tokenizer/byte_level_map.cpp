#include "io/tokenizer/byte_level_map.h"

#include "io/utf8.h"

namespace ff {

ByteLevelMap::ByteLevelMap() {
  byte_of_code_point_.fill(-1);
  const auto stands_for_itself = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; };
  uint32_t next_free = 256;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = stands_for_itself(b) ? uint32_t(b) : next_free++;
    append_utf8(chars_[b], cp);
    byte_of_code_point_[cp] = int16_t(b);
  }
}

std::string ByteLevelMap::encode(std::string_view text) const {
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char b : text) out += chars_[b];
  return out;
}

std::optional<std::string> ByteLevelMap::decode(std::string_view token) const {
  std::string out;
  for (size_t i = 0; i < token.size();) {
    const size_t n = utf8_char_length(static_cast<unsigned char>(token[i]));
    if (i + n > token.size()) return std::nullopt;
    const uint32_t cp = decode_utf8_at(token, i);
    if (cp >= byte_of_code_point_.size() || byte_of_code_point_[cp] < 0) return std::nullopt;
    out += char(byte_of_code_point_[cp]);
    i += n;
  }
  return out;
}

}  // namespace ff
