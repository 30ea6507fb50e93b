#pragma once
// Command-line words after the subcommand: `--key value` or `--key=value`; a `--flag` followed
// by another option or nothing means "true". An option given twice is refused (which of the two
// the user meant is a guess), '_' and '-' counting as the same letter.
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ff::cli {

// One row of a command's option table: the option, and for a number the closed range it takes.
// A text option (path, name) has no range. check() refuses what the table does not allow.
struct OptionRule {
  enum Kind { text, integer, number };
  std::string name;
  Kind kind = text;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::string meaning;  // what the value is, for the error: "tokens to generate"
};
OptionRule text_option(std::string name);
OptionRule int_option(std::string name, double lo, double hi, std::string meaning);
OptionRule number_option(std::string name, double lo, double hi, std::string meaning);

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
  // Checks every given option against the command's table before any work: an option the table
  // lacks (unless others_allowed: verify passes config keys through), a number that does not
  // parse, is NaN or lies outside its range, each named with the allowed range and its meaning.
  void check(const std::vector<OptionRule>& table, const std::string& usage, bool others_allowed = false) const;
};

// Throws for an option given twice.
Args parse_args(int argc, char** argv, int first);

}  // namespace ff::cli
