#pragma once
// Command-line words after the subcommand: `--key value` or `--key=value`; a `--flag` followed
// by another option or nothing means "true". Order is kept so later overrides win.
#include <string>
#include <utility>
#include <vector>

namespace ff::cli {

struct Args {
  std::vector<std::pair<std::string, std::string>> options;
  bool help = false;

  bool has(const std::string& key) const;
  std::string get(const std::string& key, const std::string& fallback = "") const;
  std::string require(const std::string& key, const std::string& usage) const;
  int get_int(const std::string& key, int fallback) const;
  // The same, refusing values outside [lo, hi] with the key, the range and why (`reason`).
  int get_int(const std::string& key, int fallback, int lo, int hi, const std::string& reason) const;
  double get_double(const std::string& key, double fallback) const;
  // A switch: absent is false; bare (`--overwrite`) or `true` is true; `false` is false; else refused.
  bool get_flag(const std::string& key) const;
  // Throws naming the first option not in `allowed`.
  void only(const std::vector<std::string>& allowed, const std::string& usage) const;
};

Args parse_args(int argc, char** argv, int first);

}  // namespace ff::cli
