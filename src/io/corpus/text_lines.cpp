#include "io/corpus/text_lines.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ff {

std::vector<std::string> read_text_lines(const std::string& path, const std::string& who) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::runtime_error(who + ": text file " + path +
                             " not found; pass the path of a UTF-8 text file (for the Bible: "
                             "bible -f Gen1:1-Rev22:21 > kjv.txt)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(who + ": cannot read " + path + "; check its permissions");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (in.bad()) {
    throw std::runtime_error(who + ": reading " + path + " failed; check the disk and retry");
  }
  return lines;
}

bool has_text(const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find_first_not_of(" \t") != std::string::npos;
  });
}

}  // namespace ff
