#pragma once
// Which ranks share one machine's cores. The launcher's nodes (comm/nodes.h) are hosts as it sees
// them; network namespaces or containers on one host are separate nodes to it, yet they share that
// host's cores, and per-core rates measured by all of them at once come out a fraction of a core's.
// Ranks whose kernel is the same (its boot id) share cores.
#include <cstdint>
#include <vector>

#include "comm/comm.h"

namespace ff {

// This process's machine: a hash of the kernel's boot id, or -1 - `node` where that cannot be read
// (then the launcher's node stands for the machine).
int64_t machine_key(int node);

// Every world rank's machine_key, in rank order (a collective over `world`).
std::vector<int64_t> machine_keys(const Comm& world);

// Per rank, whether it measures the per-core rates: every rank where each machine's ranks' threads
// fit its cores, else on each machine the first max(1, cores / threads) of its ranks (by rank).
std::vector<bool> rate_measuring_ranks(const std::vector<int64_t>& machine_of_rank, int cores, int threads);

}  // namespace ff
