#include "calibrate/shared_cores.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "comm/nodes.h"

namespace ff {

int64_t machine_key(int node) {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id) || id.empty()) return -1 - int64_t(node);
  return int64_t(std::hash<std::string>{}(id) >> 1);  // non-negative: apart from the fallback's keys
}

std::vector<int64_t> machine_keys(const Comm& world) {
  const std::vector<int>& nodes = world_rank_nodes();
  const int node = size_t(world.rank()) < nodes.size() ? nodes[size_t(world.rank())] : 0;
  int64_t mine = machine_key(node);
  std::vector<int64_t> all(size_t(world.size()));
  world.all_gather(&mine, all.data(), all.size());
  return all;
}

std::vector<bool> rate_measuring_ranks(const std::vector<int64_t>& machine_of_rank, int cores, int threads) {
  std::map<int64_t, int> ranks_on;
  for (int64_t m : machine_of_rank) ++ranks_on[m];
  const int fill = std::max(1, cores / std::max(1, threads));
  std::map<int64_t, int> seen;
  std::vector<bool> out;
  out.reserve(machine_of_rank.size());
  for (int64_t m : machine_of_rank) {
    const bool shared = ranks_on[m] * threads > cores;
    out.push_back(!shared || seen[m]++ < fill);
  }
  return out;
}

}  // namespace ff
