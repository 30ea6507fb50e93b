#pragma once
// UTF-8 validation for corpus records: text that is not UTF-8 would be tokenized as bytes the
// user never meant (Latin-1 read as byte pieces), so it is refused as a bad record instead.
#include <cstddef>
#include <string_view>

namespace ff {

// Offset of the first byte that does not start or continue a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points past U+10FFFF included), or npos when all is well.
size_t invalid_utf8_offset(std::string_view s);

}  // namespace ff
