#include "cli/layout_option.h"

#include <set>

#include "plan/layout_spec.h"

namespace ff::cli {

void apply_layout_option(TrainConfig& cfg, const std::string& text) {
  std::set<std::string> given;
  const LayoutSpec L = parse_layout(text, &given);
  cfg.tp = L.tp, cfg.pp = L.pp, cfg.cp = L.cp, cfg.sp = L.sp, cfg.zero = L.zero, cfg.recompute = L.recompute;
  cfg.dp = given.count("dp") ? L.dp : 0;
  if (given.count("schedule")) cfg.schedule = L.schedule;
  if (given.count("chunks")) cfg.chunks = L.chunks;
  if (given.count("mb")) cfg.micro_batch = L.micro_batch;
  if (given.count("m")) cfg.grad_accum = L.grad_accum;
  if (given.count("cp_comm")) cfg.cp_comm = L.cp_comm;
  if (given.count("ep")) cfg.ep = L.ep;
  if (given.count("dp_mode")) cfg.dp_mode = L.dp_mode;
  // precision=mixed names paper-scale 16-bit states, which the engine plans but does not train.
  if (given.count("precision") && L.gemm != Precision::fp32) cfg.precision = L.gemm;
}

}  // namespace ff::cli
