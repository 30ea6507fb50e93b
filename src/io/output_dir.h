#pragma once
// The folder a command writes into (--out), checked before any work so a bad path is one clear
// sentence instead of a raw `filesystem error` minutes later.
#include <string>

namespace ff {

// Creates dir (and its parents) when absent; throws naming `option` (e.g. "--out") and the path
// when it is a file, cannot be created, or does not accept a new file.
void ensure_output_dir(const std::string& dir, const std::string& option);

}  // namespace ff
