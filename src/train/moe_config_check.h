#pragma once
// The checks that tie the MoE keys to the parallel layout (the model's own MoE keys are checked by
// MoeConfig::validate): ep against n_experts and dp x cp, and the combinations not built yet.
#include "train/train_config.h"

namespace ff {

// Throws naming the keys and the fix. dp = 0 (all ranks) is checked once resolved (Mesh).
void validate_moe_layout(const TrainConfig& c);

}  // namespace ff
