#include "train/data_mixture.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

namespace fs = std::filesystem;

namespace {

constexpr const char* kForm = "write each entry as FOLDER:WEIGHT, e.g. data = [\"code:0.3\", \"web:0.7\"] or --data code:0.3,web:0.7";

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "DIR:W" or "DIR". A folder whose own name holds a colon is taken whole when it exists.
DataFolder parse_entry(const std::string& entry) {
  const size_t colon = entry.rfind(':');
  if (colon == std::string::npos || fs::is_directory(entry)) return {entry, 1};
  DataFolder f{trimmed(entry.substr(0, colon)), 0};
  const std::string w = trimmed(entry.substr(colon + 1));
  char* end = nullptr;
  f.weight = w.empty() ? NAN : std::strtod(w.c_str(), &end);
  if (w.empty() || end != w.c_str() + w.size() || !std::isfinite(f.weight) || f.weight <= 0)
    throw std::runtime_error(fmt::format(
        "config key 'data': the weight '{}' of folder '{}' is not a positive number; {} (weights need not sum to 1)",
        w, f.dir, kForm));
  return f;
}

}  // namespace

std::vector<DataFolder> data_folders(const std::string& data) {
  std::vector<DataFolder> folders;
  size_t begin = 0;
  while (true) {
    const size_t comma = data.find(',', begin);
    const std::string entry = trimmed(data.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (entry.empty())
      throw std::runtime_error(fmt::format("config key 'data' = '{}' has an empty entry; {}", data, kForm));
    folders.push_back(parse_entry(entry));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  double sum = 0;
  for (const auto& f : folders) sum += f.weight;
  for (auto& f : folders) f.weight /= sum;
  if (folders.size() == 1) return folders;
  for (size_t i = 0; i < folders.size(); ++i) {
    if (!fs::is_directory(folders[i].dir))
      throw std::runtime_error(fmt::format(
          "config key 'data': folder '{}' does not exist; run `fivefold prepare --text FILE --vocab N --out {}` "
          "first or correct the path",
          folders[i].dir, folders[i].dir));
    for (size_t j = 0; j < i; ++j)
      if (fs::equivalent(folders[i].dir, folders[j].dir))
        throw std::runtime_error(fmt::format(
            "config key 'data': folder '{}' is given twice (entries {} and {}); give each folder once, with the sum "
            "of the weights you meant",
            folders[i].dir, j + 1, i + 1));
  }
  return folders;
}

}  // namespace ff
