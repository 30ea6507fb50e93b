#pragma once
// Linear warmup from 0 to the peak, then half a cosine down to peak * min_ratio at the last step
// (the schedule of GPT-3, LLaMA and nanoGPT).
#include <optional>
#include <string>

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

// The schedule's length is fixed when a run starts (Megatron's lr_decay_iters): a resume keeps the
// length its checkpoint recorded, so a larger `steps` continues past the end at the floor instead
// of restarting the cosine (an lr jump); a new length is the explicit key lr_schedule_steps.
struct ScheduleSpan {
  int steps = 0;
  std::string note;  // for a resume whose steps or lr_schedule_steps differ from the recorded length
};
// lr_schedule_steps: the key (0 = unset); recorded: the checkpoint's length (none: a fresh run).
ScheduleSpan schedule_span(int lr_schedule_steps, int steps, std::optional<int> recorded, float floor_lr);

}  // namespace ff
