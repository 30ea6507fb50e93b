#include "calibrate/routing_run.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

namespace ff {

RoutingLoad read_routing_run(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const std::string config = (fs::path(run_dir) / "config.toml").string();
  const std::string metrics = (fs::path(run_dir) / "metrics.jsonl").string();
  if (!fs::exists(config) || !fs::exists(metrics))
    throw std::runtime_error(fmt::format("--routing-run {}: needs the run's config.toml and metrics.jsonl (a folder "
                                         "written by `fivefold train --config MOE.toml --out {}` on one rank)",
                                         run_dir, run_dir));
  toml::table t;
  try {
    t = toml::parse_file(config);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("--routing-run: {}: {}", config, std::string(e.description())));
  }
  const int experts = int(t["n_experts"].value_or(int64_t(0))), top_k = int(t["top_k"].value_or(int64_t(0)));
  if (experts < 2)
    throw std::runtime_error(fmt::format("--routing-run: {} is not a mixture-of-experts model (n_experts = {})", config,
                                         experts));
  // One rank: the statistic must come from a run no validated ep layout is, and one rank's
  // counts are the whole batch's.
  for (const char* axis : {"dp", "tp", "pp", "cp", "ep"})
    if (t[axis].value_or(int64_t(1)) > 1)
      throw std::runtime_error(fmt::format("--routing-run: {} has {} = {}; the routing statistic comes from a serial "
                                           "run (one rank, no parallel layout)",
                                           config, axis, t[axis].value_or(int64_t(1))));
  std::vector<std::vector<double>> counts;
  int steps = 0;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.contains("step_seconds") || !r.contains("moe")) continue;
    ++steps;
    for (const auto& layer : r["moe"]["layers"]) counts.push_back(layer["tokens_per_expert"].get<std::vector<double>>());
  }
  if (steps == 0)
    throw std::runtime_error(fmt::format("--routing-run: {} has no training steps with routing counts", metrics));
  RoutingLoad load = routing_load(counts, experts, top_k, steps);
  load.source = fmt::format("{} (data {})", fs::absolute(run_dir).string(), t["data"].value_or(std::string("?")));
  return load;
}

}  // namespace ff
