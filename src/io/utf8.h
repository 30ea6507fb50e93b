#pragma once
// The few UTF-8 facts the tokenizers need: where a character ends, whether a text is valid, and
// a code point's encoding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ff {

// Bytes in the character whose first byte is lead (1 for a stray continuation byte, so a
// caller walking invalid text still advances).
inline size_t utf8_char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates and code
// points past U+10FFFF included), or std::string_view::npos when the whole text is valid.
size_t first_invalid_utf8(std::string_view s);

void append_utf8(std::string& out, uint32_t code_point);

// Decodes the valid character at s[at] (the caller checked validity).
uint32_t decode_utf8_at(std::string_view s, size_t at);

// s with every invalid sequence replaced by U+FFFD, as Hugging Face's decoders return text.
std::string utf8_lossy(std::string_view s);

}  // namespace ff

namespace ff {
// Rust's char::is_whitespace (Unicode White_Space), which added tokens' lstrip/rstrip use.
bool is_unicode_whitespace(uint32_t code_point);
}  // namespace ff
