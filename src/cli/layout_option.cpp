#include "cli/layout_option.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "plan/layout_spec.h"

namespace ff::cli {

void apply_layout_option(TrainConfig& cfg, const std::string& text,
                         const std::vector<std::pair<std::string, std::string>>& flags) {
  static const std::set<std::string> layout_keys{"dp", "tp", "sp", "pp", "cp", "cp_comm", "ep", "schedule", "chunks",
                                                 "micro_batch", "grad_accum", "zero", "recompute", "precision", "dp_mode"};
  std::set<std::string> given;
  const LayoutSpec L = parse_layout(text, &given);
  for (const auto& [flag, value] : flags) {
    std::string key = flag;
    std::replace(key.begin(), key.end(), '-', '_');
    // threads is the layout's only where it names it (plan's node split); a run may set it beside.
    if (key == "threads" && given.count("threads"))
      throw std::runtime_error(fmt::format("--threads {} and --layout's threads={} both set the threads per rank: "
                                           "drop one of them",
                                           value, L.threads));
    if (layout_keys.count(key))
      throw std::runtime_error(fmt::format("--{} {} and --layout both set the layout: put it in the layout string "
                                           "(e.g. --layout \"{},{}={}\") or drop --layout",
                                           flag, value, text, key == "micro_batch" ? "mb" : key == "grad_accum" ? "m" : key, value));
  }
  cfg.tp = L.tp, cfg.pp = L.pp, cfg.cp = L.cp, cfg.sp = L.sp, cfg.zero = L.zero, cfg.recompute = L.recompute;
  cfg.dp = given.count("dp") ? L.dp : 0;
  if (given.count("schedule")) cfg.schedule = L.schedule;
  if (given.count("chunks")) cfg.chunks = L.chunks;
  if (given.count("mb")) cfg.micro_batch = L.micro_batch;
  if (given.count("m")) cfg.grad_accum = L.grad_accum;
  if (given.count("cp_comm")) cfg.cp_comm = L.cp_comm;
  if (given.count("ep")) cfg.ep = L.ep;
  if (given.count("dp_mode")) cfg.dp_mode = L.dp_mode;
  if (given.count("threads")) cfg.threads = L.threads;  // plan's ranks x threads split
  // precision=mixed names paper-scale 16-bit states, which the engine plans but does not train.
  if (given.count("precision") && L.gemm != Precision::fp32) cfg.precision = L.gemm;
}

}  // namespace ff::cli
