#pragma once
// The memory estimate a run makes before it allocates anything: printed at start-up, and a
// refusal naming the estimate, the machine's available memory and a layout that fits when the
// run would not (`--dim 1000000` used to end in std::bad_alloc after 7 s).
#include <string>

#include "plan/layout_spec.h"
#include "plan/memory_model.h"
#include "train/train_config.h"

namespace ff {

// The planner's view of a resolved config (dp, threads filled in).
LayoutSpec layout_of(const TrainConfig& c);

struct MemoryCheck {
  RankMemory estimate;  // the largest pipeline rank's
  std::string line;     // for the start-up output
};
// Throws (before any allocation) when the estimate exceeds MemAvailable / ranks on this machine.
MemoryCheck check_memory_fits(const TrainConfig& c);

}  // namespace ff
