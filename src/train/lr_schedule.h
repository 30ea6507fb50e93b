#pragma once
// Linear warmup from 0 to the peak, then half a cosine down to peak * min_ratio at the last step
// (the schedule of GPT-3, LLaMA and nanoGPT).
#include "core/enum_table.h"

namespace ff {

// The config key lr_scaling: how the schedule's peak follows the global batch
// (train/dp_mode_config.h): not at all, in proportion, or with its square root.
enum class LrScaling { none, linear, sqrt };
const EnumTable<LrScaling>& lr_scaling_names();

struct LrSchedule {
  float peak;
  float min_ratio;
  int warmup;
  int total;
  float at(int step) const;  // step is 1-based: the step about to be taken
};

}  // namespace ff
