#pragma once
// The cluster the planner assumes without a cluster file, and the one `fivefold calibrate` starts
// from: this machine as the engine runs on it, measured here (calibrate/hardware_peak.h).
#include "plan/cluster.h"

namespace ff {

// FMA peak and sgemm share from the cached measurement, MemAvailable shared by `ranks`,
// shared-memory links with defaults until calibrated.
ClusterSpec this_machine(int ranks);

}  // namespace ff
