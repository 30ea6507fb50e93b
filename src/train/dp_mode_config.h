#pragma once
// The config side of data-parallel training: the dp_mode keys checked against the layout before any
// heavy work, the learning rate scaled with the global batch, and the straggler knob.
#include <string>

#include "parallel/data/dp_mode.h"
#include "train/train_config.h"

namespace ff {

// Throws "config: ..." naming the key and the fix: unknown values, a mode needing dp >= 2 with
// dp 1, modes that do not compose (ZeRO, tp, pp, cp, grad_sync), mode keys set for a mode that
// ignores them, lr scaling without a reference batch or (linear) without warm-up.
void validate_dp_mode_config(const TrainConfig& c);
DpModeConfig dp_mode_config(const TrainConfig& c);
// One line for the start of a run, e.g. "dp_mode diloco: H = 8, outer Nesterov lr 0.7 ...".
std::string describe_dp_mode(const TrainConfig& c);

// scaled_lr := lr x (global batch / lr_reference_batch) (linear), its square root (sqrt), or 1
// (none). Goyal et al. (2017) pair the linear rule with a gradual warm-up from a small lr, which
// warmup_steps provides (validate refuses linear with warmup_steps = 0).
void resolve_lr_scaling(TrainConfig& c);
// "lr 0.001 x 2 (linear: global batch 16 / reference 8) = 0.002"; empty for none.
std::string describe_lr_scaling(const TrainConfig& c);

// simulate_straggler = "RANK:FACTOR".
struct Straggler {
  int rank = -1;  // -1: nobody
  double factor = 1;
};
Straggler parse_straggler(const std::string& text);  // throws naming the key
// On the straggling rank, sleeps (factor - 1) x compute_seconds.
void straggle(const Straggler& s, int world_rank, double compute_seconds);

}  // namespace ff
