#include "train/resume_check.h"

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace ff {

namespace {

// Keys that would change which sequences a step reads or what a step is; the global batch is
// checked as a product instead of key by key.
const std::set<std::string> kRefused = {"seed", "data"};
const std::set<std::string> kGlobalBatch = {"micro_batch", "grad_accum", "dp"};
// The model's shape: refused by the checkpoint's model comparison, with its own message.
const std::set<std::string> kModel = {"vocab_size",  "dim",           "n_layers",     "n_heads",
                                      "n_kv_heads",  "ffn_dim",       "seq_len",      "max_positions",
                                      "rms_eps",     "rope_theta",    "rope_scaling", "rope_factor",
                                      "rope_low_freq_factor",         "rope_high_freq_factor",
                                      "rope_original_seq_len",        "head_dim",     "qkv_bias",
                                      "tied_embeddings",              "init_std"};

// Every key's value as text, one format for both sides (TOML printed back by toml++ rules).
std::map<std::string, std::string> values_of(const std::string& toml_text, const std::string& what) {
  toml::table table;
  try {
    table = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("{} is not valid TOML ({}); resume with a new --out folder", what,
                                         std::string(e.description())));
  }
  std::map<std::string, std::string> out;
  for (auto&& [k, node] : table) {
    std::string v;
    if (node.is_string())
      v = *node.value<std::string>();
    else if (node.is_integer())
      v = std::to_string(*node.value<int64_t>());
    else if (node.is_floating_point())
      v = fmt::format("{}", *node.value<double>());
    else if (node.is_boolean())
      v = *node.value<bool>() ? "true" : "false";
    out[std::string(k.str())] = v;
  }
  return out;
}

// (fmt::join would do, but instantiates a formatter that trips GCC 12's -Wstringop-overflow.)
std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

int64_t int_of(const std::map<std::string, std::string>& m, const char* key, int64_t fallback) {
  auto it = m.find(key);
  return it == m.end() ? fallback : std::stoll(it->second);
}

}  // namespace

std::vector<ConfigChange> check_resume_config(const std::string& saved_toml, const TrainConfig& now,
                                              const std::string& run_dir, bool data_by_contents) {
  if (saved_toml.empty()) return {};
  const std::string what = fmt::format("the config saved in the checkpoint of '{}'", run_dir);
  const auto before = values_of(saved_toml, what);
  const auto after = values_of(config_to_toml(now), "the new config");
  // A key the old run did not know had its default then.
  const TrainConfig default_config;  // named: a temporary trips GCC 12's -Wmaybe-uninitialized
  const auto defaults = values_of(config_to_toml(default_config), "the default config");
  std::vector<ConfigChange> accepted;
  std::vector<std::string> refused;
  for (const auto& [key, value] : after) {
    auto old = before.find(key);
    const std::string was = old != before.end() ? old->second : defaults.at(key);
    // init_from only chooses a fresh run's weights; a resume ignores it.
    if (was == value || kModel.count(key) || key == "init_from") continue;
    if (kRefused.count(key) && !(key == "data" && data_by_contents))
      refused.push_back(fmt::format("'{}' was {} and is now {}", key, was, value));
    else
      accepted.push_back({key, was, value});
  }
  const int64_t g_before =
      int_of(before, "micro_batch", 0) * int_of(before, "grad_accum", 0) * int_of(before, "dp", 1);
  const int64_t g_after = int64_t(now.micro_batch) * now.grad_accum * (now.dp > 0 ? now.dp : 1);
  if (before.count("micro_batch") && g_before != g_after) {
    std::vector<std::string> keys;
    for (const ConfigChange& c : accepted)
      if (kGlobalBatch.count(c.key)) keys.push_back(fmt::format("'{}' {} -> {}", c.key, c.before, c.after));
    refused.push_back(fmt::format("the global batch micro_batch x grad_accum x dp was {} and is now {} ({})",
                                  g_before, g_after, joined(keys, ", ")));
  }
  if (!refused.empty())
    throw std::runtime_error(
        fmt::format("cannot resume '{}' with this config: {}. These change the data order or what a step "
                    "means, so the run "
                    "would silently not be the one it continues; keep the old values (see config.toml in the "
                    "run folder), or "
                    "start a new --out folder. (The learning-rate schedule, the layout over ranks and the "
                    "split of the global "
                    "batch may change.)",
                    run_dir, joined(refused, "; ")));
  return accepted;
}

std::optional<int64_t> saved_config_integer(const std::string& saved_toml, const std::string& key) {
  if (saved_toml.empty()) return std::nullopt;
  const auto values = values_of(saved_toml, "the config saved in the checkpoint");
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string describe_changes(const std::vector<ConfigChange>& changes) {
  std::vector<std::string> parts;
  for (const ConfigChange& c : changes) parts.push_back(fmt::format("{} {} -> {}", c.key, c.before, c.after));
  return joined(parts, ", ");
}

}  // namespace ff
