#pragma once
// How unevenly a mixture-of-experts model's router spreads its routes over expert-parallel ranks,
// measured once per model and data (not per layout), so the step-time model can charge an ep
// layout for the rank that waits longest: every block's exchange waits for the rank whose experts
// received the most rows, and that rank's expert GEMMs and row copies set the block's time.
//
// Where it comes from: a short serial run of the model on the data (`fivefold train`, one rank;
// its metrics.jsonl holds every block's routed rows per expert per step), read by `fivefold
// calibrate --routing-run RUN` into the cluster file's [routing] table. The global batch's routing
// is the same whichever layout runs it (the layouts are checked equal to the serial run), so the
// serial run's counts are what each ep layout's ranks receive; grouping the experts as ep places
// them (rank r holds experts r E/ep .. (r+1) E/ep - 1) gives each rank's rows.
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

namespace ff {

struct RoutingLoad {
  int experts = 0;  // the model's routed experts (0: nothing measured)
  int top_k = 0;
  int steps = 0;    // steps of the routing run the statistic averages over
  std::string source;  // the run it was read from, for people
  // (ep degree, the mean over steps and MoE blocks of the busiest ep rank's routed rows over the
  // mean rank's), for every divisor of `experts` above 1.
  std::vector<std::pair<int, double>> busiest_over_mean;
  // The factor for an ep layout of a model with `experts` experts, top-k `top_k`: 1 when nothing
  // was measured for this model (an even spread, as before).
  double factor(int ep, int model_experts, int model_top_k) const;
  // One line for the plan's explanation of ep layouts: what was measured, or that nothing was.
  std::string explain() const;
};

// From routed rows per expert: counts[i] is one block's rows per expert in one step (E values).
RoutingLoad routing_load(const std::vector<std::vector<double>>& counts, int experts, int top_k, int steps);

// The [routing] table of a cluster.toml (absent: an empty RoutingLoad); unknown keys throw naming
// the file.
RoutingLoad read_routing(const toml::table* t, const std::string& path);
std::string routing_to_toml(const RoutingLoad& r);

}  // namespace ff
