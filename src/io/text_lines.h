#pragma once
// The one way the io layer reads a text corpus, so the tokenizer trains on exactly the lines
// that prepare encodes.
#include <string>
#include <vector>

namespace ff {

// Lines without their '\n', and without a trailing '\r' so CRLF and LF files read the same.
// Throws naming the file when it is missing or unreadable; who prefixes the message.
std::vector<std::string> read_text_lines(const std::string& path, const std::string& who);
// True when some line holds more than spaces and tabs.
bool has_text(const std::vector<std::string>& lines);

}  // namespace ff
