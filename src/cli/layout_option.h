#pragma once
// `--layout "dp=2,tp=2,pp=2,1f1b,mb=2,m=4,zero=1"`: the layout string `plan` prints, applied to a
// training config the same way by `train` and `verify` (one parser: plan/layout_spec.h).
#include <string>
#include <utility>
#include <vector>

#include "train/train_config.h"

namespace ff::cli {

// Sets the config's tp, pp, cp, sp, zero and recompute from the string (their defaults where it
// does not name them) and dp, schedule, chunks, mb, m, cp_comm, ep, dp_mode, threads and a 16-bit
// precision where it names them (dp 0: the ranks the other axes leave). Throws naming a bad key or value, or
// a flag among `flags` (the command line's other options) that sets what the layout sets.
void apply_layout_option(TrainConfig& cfg, const std::string& text,
                         const std::vector<std::pair<std::string, std::string>>& flags);

}  // namespace ff::cli
