#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ff {

const EnumTable<LrScaling>& lr_scaling_names() {
  static const EnumTable<LrScaling> names{
      {LrScaling::none, "none"}, {LrScaling::linear, "linear"}, {LrScaling::sqrt, "sqrt"}};
  return names;
}

float LrSchedule::at(int step) const {
  if (warmup > 0 && step <= warmup) return peak * float(step) / float(warmup);
  const int decay_steps = total - warmup;
  if (decay_steps <= 0) return peak;
  const double progress = std::clamp(double(step - warmup) / decay_steps, 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return float(peak * (min_ratio + (1.0 - min_ratio) * cosine));
}


ScheduleSpan schedule_span(int lr_schedule_steps, int steps, std::optional<int> recorded, float floor_lr) {
  if (lr_schedule_steps > 0) {
    if (!recorded || *recorded == lr_schedule_steps) return {lr_schedule_steps, ""};
    return {lr_schedule_steps,
            fmt::format("lr schedule re-planned by lr_schedule_steps: it spans {} steps (the checkpoint's run "
                        "planned {}), so lr moves to the new cosine's value at once",
                        lr_schedule_steps, *recorded)};
  }
  if (!recorded || *recorded == steps) return {recorded.value_or(steps), ""};
  if (steps > *recorded)
    return {*recorded, fmt::format("lr schedule kept at the run's {} steps: steps {} to {} train at its floor, "
                                   "lr x min_lr_ratio = {:g} (set lr_schedule_steps = {} to stretch the cosine "
                                   "over the new steps instead; lr then jumps)",
                                   *recorded, *recorded + 1, steps, floor_lr, steps)};
  return {*recorded, fmt::format("lr schedule kept at the run's {} steps: steps = {} ends the run before lr reaches "
                                 "its floor (set lr_schedule_steps = {} to end the cosine there instead)",
                                 *recorded, steps, steps)};
}

}  // namespace ff
