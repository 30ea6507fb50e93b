// Node discovery at start-up and the process-wide cross-node counters.
#include "comm/nodes.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <string>

#include "comm/engine.h"

namespace ff {
namespace {
std::atomic<uint64_t> g_cross_bytes{0};     // written by whichever thread starts a send
std::atomic<uint64_t> g_cross_messages{0};
}  // namespace

std::vector<int> number_nodes(const std::vector<int>& label_of_rank) {
  std::map<int, int> index;
  std::vector<int> nodes;
  nodes.reserve(label_of_rank.size());
  for (int label : label_of_rank) nodes.push_back(index.emplace(label, int(index.size())).first->second);
  return nodes;
}

const std::vector<int>& world_rank_nodes() { return detail::Engine::instance().rank_nodes(); }

int node_count() {
  int count = 0;
  for (int node : world_rank_nodes()) count = std::max(count, node + 1);
  return count;
}

CrossNodeTraffic cross_node_traffic() {
  return {g_cross_bytes.load(std::memory_order_relaxed), g_cross_messages.load(std::memory_order_relaxed)};
}

namespace detail {

std::vector<int> discover_nodes(MPI_Comm world) {
  auto during = [] { return std::string("init_comm: finding which ranks share a node"); };
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type", during);
  int lowest = rank;
  check_mpi(MPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, local), "MPI_Allreduce", during);
  MPI_Comm_free(&local);
  std::vector<int> labels(size_t(size), 0);
  check_mpi(MPI_Allgather(&lowest, 1, MPI_INT, labels.data(), 1, MPI_INT, world), "MPI_Allgather", during);
  return number_nodes(labels);
}

void note_cross_node_send(CommState& s, int peer, size_t bytes) {
  if (!s.peer_off_node[size_t(peer)]) return;
  s.cross_node_bytes.fetch_add(bytes, std::memory_order_relaxed);
  s.cross_node_messages.fetch_add(1, std::memory_order_relaxed);
  g_cross_bytes.fetch_add(bytes, std::memory_order_relaxed);
  g_cross_messages.fetch_add(1, std::memory_order_relaxed);
  if (CommState* owner = s.counts_into) {
    owner->cross_node_bytes.fetch_add(bytes, std::memory_order_relaxed);
    owner->cross_node_messages.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace detail
}  // namespace ff
