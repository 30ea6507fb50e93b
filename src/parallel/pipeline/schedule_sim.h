#pragma once
// A pure, timing-only executor for pipeline schedules: it walks each rank's action list in order,
// lets a recv finish only once the peer has issued the matching send, and reports the makespan,
// the bubble and the activation memory. It is how schedules are judged without MPI.
#include <string>
#include <vector>

#include "parallel/pipeline/pipeline_schedule.h"

namespace ff {

// When one compute action ran: index into its rank's action list, start and end time.
struct ComputeSpan {
  size_t action;
  double start, end;
};

struct SimResult {
  double makespan = 0;
  std::vector<double> busy_per_rank;       // compute time only; send/recv are free to the rank
  double bubble_fraction = 0;              // 1 - sum(busy) / (p * makespan)
  // Max microbatch-chunks whose forward is done and whose last backward action is not: backward,
  // or backward_weight (W) when split, since the stashed input lives until then
  // (pipeline_executor.h's buffer lifetimes). For split schedules this is the activation memory.
  std::vector<int> peak_inflight_per_rank;
  bool deadlock = false;                   // no rank could progress while some had actions left
  std::vector<std::vector<ComputeSpan>> spans;  // per rank, in list order: what renderers draw
  std::string error;                       // empty when the schedule ran to completion cleanly
};

// Costs are for one microbatch through a whole rank (all its layers): a chunk action costs t / v,
// because with v chunks each holds 1/v of the rank's layers. Split backwards cost t_backward / 2
// each for B and W (the ZB paper's equal-cost assumption). A message arrives t_comm after its send.
SimResult simulate_schedule(const PipeScheduleSpec& spec,
                            const std::vector<std::vector<PipeAction>>& schedule,
                            double t_forward = 1, double t_backward = 2, double t_comm = 0);

// The same with each rank's own costs (stages of unequal work, as the planner's step model has
// them): a microbatch's forward and full backward through all of the rank's layers, and the part
// of that backward a split schedule defers to W (its B costs backward - weight).
struct RankCosts {
  double forward = 1, backward = 2, weight = 1;
};
SimResult simulate_schedule(const PipeScheduleSpec& spec,
                            const std::vector<std::vector<PipeAction>>& schedule,
                            const std::vector<RankCosts>& costs, double t_comm = 0);

// The letter both renderers draw for a compute action: F, B (full or input backward) or W, in lower
// case for chunks >= 1.
char compute_letter(const PipeAction& a);

// Text grid: one row per rank, one 2-character cell per time slot (F = 1 slot, B = 2 slots, or
// B = W = 1 slot when split), "F3" = forward of microbatch 3, lower case for chunks >= 1, ".." idle;
// the last line gives the bubble fraction at those costs.
std::string render_schedule_text(const PipeScheduleSpec& spec,
                                 const std::vector<std::vector<PipeAction>>& schedule);

}  // namespace ff
