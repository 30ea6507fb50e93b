#include "cli/args.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ff::cli {

namespace {
// '_' and '-' name the same option (config keys are spelled either way).
std::string canonical(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}
}  // namespace

Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string w = argv[i];
    if (w == "-h" || w == "--help") {
      a.help = true;
      continue;
    }
    if (w.rfind("--", 0) != 0)
      throw std::runtime_error("unexpected argument '" + w + "': options are written --key value");
    w = w.substr(2);
    if (auto eq = w.find('='); eq != std::string::npos) {
      a.options.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      a.options.emplace_back(w, argv[++i]);
    } else {
      a.options.emplace_back(w, "true");
    }
    const std::string added = canonical(a.options.back().first);
    for (size_t k = 0; k + 1 < a.options.size(); ++k)
      if (canonical(a.options[k].first) == added)
        throw std::runtime_error(fmt::format("--{} is given twice ('{}' and '{}'); give it once", added,
                                             a.options[k].second, a.options.back().second));
  }
  return a;
}

bool Args::has(const std::string& key) const {
  return std::any_of(options.begin(), options.end(), [&](auto& kv) { return kv.first == key; });
}

std::string Args::get(const std::string& key, const std::string& fallback) const {
  std::string v = fallback;
  for (auto& [k, value] : options)
    if (k == key) v = value;
  return v;
}

// parse_args stores a bare `--key` as "true"; an option that needs a value then has none.
static void require_value(const std::string& key, const std::string& value, const char* example) {
  if (value == "true")
    throw std::runtime_error("--" + key + " needs a value, e.g. --" + key + " " + example);
}

std::string Args::require(const std::string& key, const std::string& usage) const {
  if (!has(key)) throw std::runtime_error("missing --" + key + "\nusage: " + usage);
  require_value(key, get(key), "PATH");
  return get(key);
}

int Args::get_int(const std::string& key, int fallback) const {
  if (!has(key)) return fallback;
  require_value(key, get(key), "8");
  try {
    size_t used = 0;
    int v = std::stoi(get(key), &used);
    if (used == get(key).size()) return v;
  } catch (...) {
  }
  throw std::runtime_error("--" + key + " expects an integer, got '" + get(key) + "'");
}

int Args::get_int(const std::string& key, int fallback, int lo, int hi, const std::string& reason) const {
  const int v = get_int(key, fallback);
  if (v < lo || v > hi)
    throw std::runtime_error("--" + key + " is " + std::to_string(v) + ", it must be between " +
                             std::to_string(lo) + " and " + std::to_string(hi) + " (" + reason + ")");
  return v;
}

bool Args::get_flag(const std::string& key) const {
  if (!has(key)) return false;
  const std::string v = get(key);
  if (v != "true" && v != "false")
    throw std::runtime_error("--" + key + " is a switch: write --" + key + " (or --" + key + " false), got '" + v + "'");
  return v == "true";
}

double Args::get_double(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  require_value(key, get(key), "0.5");
  try {
    size_t used = 0;
    double v = std::stod(get(key), &used);
    if (used == get(key).size()) return v;
  } catch (...) {
  }
  throw std::runtime_error("--" + key + " expects a number, got '" + get(key) + "'");
}

void Args::only(const std::vector<std::string>& allowed, const std::string& usage) const {
  for (auto& [k, v] : options)
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      throw std::runtime_error("unknown option --" + k + "\nusage: " + usage);
}

OptionRule text_option(std::string name) {
  OptionRule r;
  r.name = std::move(name);
  return r;
}
OptionRule int_option(std::string name, double lo, double hi, std::string meaning) {
  return {std::move(name), OptionRule::integer, lo, hi, std::move(meaning)};
}
OptionRule number_option(std::string name, double lo, double hi, std::string meaning) {
  return {std::move(name), OptionRule::number, lo, hi, std::move(meaning)};
}

void Args::check(const std::vector<OptionRule>& table, const std::string& usage, bool others_allowed) const {
  for (const auto& [key, value] : options) {
    auto rule = std::find_if(table.begin(), table.end(), [&](const OptionRule& r) { return r.name == key; });
    if (rule == table.end()) {
      if (others_allowed) continue;
      throw std::runtime_error("unknown option --" + key + "\nusage: " + usage);
    }
    if (rule->kind == OptionRule::text) continue;
    const double v = rule->kind == OptionRule::integer ? double(get_int(key, 0)) : get_double(key, 0);
    if (!(v >= rule->lo && v <= rule->hi))  // NaN fails both
      throw std::runtime_error(fmt::format("--{} is {}; it must be {} between {} and {} ({})", key, value,
                                           rule->kind == OptionRule::integer ? "an integer" : "a number",
                                           rule->lo, rule->hi, rule->meaning));
  }
}

}  // namespace ff::cli
