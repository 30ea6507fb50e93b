#include "plan/pipeline_timeline.h"

#include <stdexcept>

namespace ff {

double pipeline_makespan(const LayoutSpec& L, const std::vector<RankCosts>& costs) {
  PipeScheduleSpec spec{};
  try {
    spec = PipeScheduleSpec{L.schedule, L.pp, L.grad_accum, L.chunks};
    validate_schedule_spec(spec);
  } catch (const std::exception&) {
    return -1;
  }
  const SimResult sim = simulate_schedule(spec, make_schedule(spec), costs, 0);
  return sim.error.empty() ? sim.makespan : -1;
}

}  // namespace ff
