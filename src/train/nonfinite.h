#pragma once
// What the trainer does when a step goes wrong numerically.
//
// The check is on the gradient norm and the loss after they are reduced over every rank, so all
// ranks see the same numbers and take the same branch: a NaN on one rank's data reaches the others
// through the gradient all-reduce, and nobody waits in a collective the others skipped. A norm of
// exactly 0 counts too: in fp32 it only happens when an RMSNorm's sum of squares overflowed to inf
// (its 1/rms is then 0 and every gradient behind it vanishes), which is how a too-large lr kills a
// model without a single NaN ("loss exactly ln V, gradient norm 0").
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "model/llama.h"

namespace ff {

class Comm;

// The config key on_nonfinite: stop the run (after locating the first bad value; no update) or
// skip the step (the batch is consumed, the weights and optimizer state stay as they were).
enum class NonfiniteAction { stop, skip };
const EnumTable<NonfiniteAction>& nonfinite_action_names();

// True when a step with this (reduced) loss and gradient norm must not update the weights.
// expect_gradient false: a norm of 0 is legitimate (async DP applies nothing during its first
// max_staleness steps), so only a non-finite value counts.
bool step_is_nonfinite(double loss, double grad_norm, bool expect_gradient = true);
// "the gradient norm is nan", "the gradient norm is 0 (...)", "the loss is inf".
std::string describe_nonfinite(double loss, double grad_norm);

// Re-runs this rank's micro-batches of the failed step with every activation kept and checked,
// then checks the gradients tensor by tensor in the order backward produces them. Returns, on every
// rank of `world` (collective: every rank calls it with its own rows), the first point that went
// bad ordered by (micro-batch, position in the step, rank), e.g. "micro-batch 0, layer 1,
// activation 'mid' (residual after attention) on rank 1". pp must be 1 (the model is whole on each
// rank; tp and ZeRO layouts run their hooks and gathers in lockstep as in training).
std::string locate_nonfinite(Llama& model, ParamSource& params, const Comm* world, const int32_t* inputs,
                             const int32_t* targets, int micro_batches, int micro_batch, int seq_len,
                             float grad_scale);

// on_nonfinite = skip carries a run past a rare bad batch; a run that skips most of its steps is not
// training, and exiting 0 with a checkpoint would say it did. The rule: the run stops once more
// than half of the steps it has taken were skipped (judged from its 10th step on), or 8 in a row.
class SkipBudget {
 public:
  static constexpr int kMaxInARow = 8, kMinSteps = 10;
  // Records one step of this process; returns why the run must stop now, or "".
  std::string record(bool skipped);

 private:
  int steps_ = 0, skipped_ = 0, in_a_row_ = 0;
};

// Warns when the loss jumps above `factor` x the median of the last few steps' losses. A state that
// followed a spike is not checkpointed until a step without a spike confirms it.
class LossSpikeWatch {
 public:
  explicit LossSpikeWatch(float factor) : factor_(factor) {}
  // Records the loss; returns the recent median it exceeded (0 when it is no spike).
  double observe(double loss);

 private:
  float factor_;
  std::deque<double> recent_;
};

}  // namespace ff
