#pragma once
// GPT-2's reversible byte <-> printable-character mapping, which byte-level BPE vocabularies are
// written in: the printable Latin-1 bytes stand for themselves, the other 68 bytes take the code
// points from U+0100 up, in byte order.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ff {

class ByteLevelMap {
 public:
  ByteLevelMap();
  // The UTF-8 text of the character that stands for byte b.
  const std::string& char_of(uint8_t b) const { return chars_[b]; }
  // Every byte of text replaced by its character.
  std::string encode(std::string_view text) const;
  // The bytes that token's characters stand for, or nullopt when a character is not in the map
  // (an added token written in plain text).
  std::optional<std::string> decode(std::string_view token) const;

 private:
  std::array<std::string, 256> chars_;
  std::array<int16_t, 512> byte_of_code_point_;  // -1: not a mapped character
};

}  // namespace ff
