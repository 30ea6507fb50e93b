#pragma once
// The planner's search: every layout of N ranks (tp, sp, pp + schedule + chunks, dp, micro-batch
// split, ZeRO stage, recompute), predicted, those that do not fit dropped, the rest ranked by
// step time.
#include <string>
#include <vector>

#include "plan/step_time.h"

namespace ff {

struct PlanRequest {
  int ranks = 1;
  int global_batch = 0;  // sequences per step; 0 = the config's (micro_batch x grad_accum x dp)
  int threads = 1;       // per rank (engine mode)
  int max_micro_batch = 8;
};

struct PlanResult {
  std::vector<LayoutPrediction> ranked;  // fitting layouts, fastest first
  int considered = 0, dropped_memory = 0;
  // Splits of the ranks whose data-parallel degree does not divide the global batch, and the
  // smallest such degree: a batch that is a multiple of it would have a layout.
  int dropped_batch = 0, smallest_dp_dropped = 0, global_batch = 0;
};

// 1 .. n's divisors, ascending.
std::vector<int> divisors(int n);
// Fastest first; equal steps by the smaller peak memory.
void rank_by_step_time(std::vector<LayoutPrediction>& ranked);

PlanResult search_layouts(const ModelConfig& c, const ClusterSpec& cl, const PlanRequest& req);

// The top `k` as a table a person reads: layout, memory by category, step time and its parts.
std::string plan_table(const PlanResult& r, const ClusterSpec& cl, int k);
// Every ranked layout (or the top k) as JSON lines for tools.
std::string plan_json(const PlanResult& r, int k);

}  // namespace ff
