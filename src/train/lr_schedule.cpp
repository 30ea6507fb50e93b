#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

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

}  // namespace ff
