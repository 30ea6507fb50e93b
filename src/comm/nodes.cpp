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

std::string off_node_ranks_text(const std::vector<int>& group, int self, const std::vector<int>& rank_nodes,
                                const std::vector<std::string>& names) {
  auto node_of = [&](int rank) { return size_t(rank) < rank_nodes.size() ? rank_nodes[size_t(rank)] : -1; };
  const int own = node_of(self);
  std::vector<int> order;                // other nodes in order of appearance
  std::map<int, std::vector<int>> ranks;  // their ranks in the group
  for (int rank : group) {
    const int node = node_of(rank);
    if (node < 0 || node == own) continue;
    if (ranks[node].empty()) order.push_back(node);
    ranks[node].push_back(rank);
  }
  std::string out;
  for (int node : order) {
    const std::vector<int>& r = ranks[node];
    out += out.empty() ? "" : "; ";
    out += r.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < r.size(); ++i) out += (i ? ", " : "") + std::to_string(r[i]);
    out += " on node " + (size_t(node) < names.size() ? names[size_t(node)] : std::to_string(node));
  }
  return out;
}

const std::vector<int>& world_rank_nodes() { return detail::Engine::instance().rank_nodes(); }
const std::vector<std::string>& node_names() { return detail::Engine::instance().node_names(); }

int node_count() {
  int count = 0;
  for (int node : world_rank_nodes()) count = std::max(count, node + 1);
  return count;
}

CrossNodeTraffic cross_node_traffic() {
  return {g_cross_bytes.load(std::memory_order_relaxed), g_cross_messages.load(std::memory_order_relaxed)};
}

namespace detail {

NodeMap discover_nodes(MPI_Comm world) {
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
  // Host names, so that a hang across nodes can name the node (the watchdog's message).
  std::vector<char> host(MPI_MAX_PROCESSOR_NAME, '\0'), hosts(size_t(size) * MPI_MAX_PROCESSOR_NAME, '\0');
  int length = 0;
  check_mpi(MPI_Get_processor_name(host.data(), &length), "MPI_Get_processor_name", during);
  check_mpi(MPI_Allgather(host.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME,
                          MPI_CHAR, world),
            "MPI_Allgather", during);
  NodeMap map;
  map.rank_nodes = number_nodes(labels);
  for (int r = 0; r < size; ++r)
    if (size_t(map.rank_nodes[size_t(r)]) == map.names.size())  // the node's lowest rank comes first
      map.names.emplace_back(hosts.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME);
  return map;
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
