#pragma once
// `fivefold calibrate --routing-run RUN`: the routed rows per expert of a serial run of a
// mixture-of-experts model (its config.toml and metrics.jsonl) as the [routing] statistic the
// step-time model charges ep layouts with (plan/routing_load.h).
#include <string>

#include "plan/routing_load.h"

namespace ff {

// Throws naming the file when RUN is not a finished serial run of a MoE model.
RoutingLoad read_routing_run(const std::string& run_dir);

}  // namespace ff
