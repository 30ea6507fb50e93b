#pragma once
// A small text file's lines in memory, for training a tokenizer on a file. prepare streams its
// corpus through io/corpus/ instead, and trains on the documents it encodes.
#include <string>
#include <vector>

namespace ff {

// Lines without their '\n', and without a trailing '\r' so CRLF and LF files read the same.
// Throws naming the file when it is missing or unreadable; who prefixes the message.
std::vector<std::string> read_text_lines(const std::string& path, const std::string& who);
// True when some line holds more than spaces and tabs.
bool has_text(const std::vector<std::string>& lines);

}  // namespace ff
