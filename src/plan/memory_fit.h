#pragma once
// Does a layout fit this machine? The budget is MemAvailable shared by the ranks on the machine;
// when a layout does not fit, the planner looks for the smallest change that does.
#include <cstdint>
#include <optional>
#include <string>

#include "model/model_config.h"
#include "plan/layout_spec.h"
#include "plan/memory_model.h"

namespace ff {

// Bytes this machine can still give (/proc/meminfo MemAvailable). FIVEFOLD_MEM_AVAILABLE (bytes)
// overrides it, so tests can pose a smaller machine. 0 when neither is readable.
int64_t machine_available_bytes();

// A layout close to L that fits `budget` bytes per rank, trying in order: a higher ZeRO stage
// over the same ranks, selective then full recompute (each with the highest ZeRO stage), then
// twice, four times ... 1024 times the data-parallel ranks with ZeRO-3 and full recompute, the
// global batch split over them where it divides.
// nullopt when none of those fits (the model itself is too large for this kind of machine).
std::optional<LayoutSpec> suggest_fitting_layout(const ModelConfig& c, const LayoutSpec& L, int64_t budget,
                                                 const EngineHost& host);

// The start-up line: "memory per rank (estimated): params ..., total X of Y available (...)".
std::string describe_memory_budget(const RankMemory& m, int64_t available, int local_ranks);

// The refusal: the estimate, the budget, and the suggested layout (with its estimate, fit_bytes)
// as config keys, or what to change when no layout fits.
std::string memory_refusal(const RankMemory& m, int64_t available, int local_ranks,
                           const std::optional<LayoutSpec>& fits, int64_t fit_bytes);

}  // namespace ff
