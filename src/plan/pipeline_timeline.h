#pragma once
// The pipeline part of a step as the engine's schedule runs it: each rank's action list
// (parallel/pipeline/pipeline_schedule.h) walked with that rank's own forward, backward and
// weight-pass costs (schedule_sim.h), so unequal stages wait where the real schedule makes them
// wait. The closed form m x slowest + the other stages' fill holds only for equal stages: with a
// slow first stage 1F1B's interleaving hides part of the fill that GPipe's all-forwards-first
// order exposes.
#include <vector>

#include "parallel/pipeline/schedule_sim.h"
#include "plan/layout_spec.h"

namespace ff {

// Seconds of compute plus waiting of the step's pipeline part (the makespan) for L's schedule,
// stages and micro-batches; costs per pipeline rank. Negative when the schedule cannot be built
// for these numbers (the caller keeps the closed form).
double pipeline_makespan(const LayoutSpec& L, const std::vector<RankCosts>& costs);

}  // namespace ff
