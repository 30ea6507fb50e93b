#pragma once
// Which ranks share a node (a host: shared memory inside it, the network between hosts), and
// the bytes this process sent across nodes.
//
// init_comm learns the nodes once from MPI (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the
// launcher's notion of a host), so the mesh can keep the chatty groups inside a node and the
// counters can tell the slow link's bytes from shared memory's.
#include <cstdint>
#include <string>
#include <vector>

namespace ff {

// Node of every world rank, numbered 0, 1, ... in the order of each node's lowest world rank, so
// world rank 0 is on node 0. One entry (node 0) for a singleton; empty before init_comm.
const std::vector<int>& world_rank_nodes();
int node_count();  // distinct entries of world_rank_nodes()
// Host name of every node (MPI_Get_processor_name of its lowest rank), indexed by node.
const std::vector<std::string>& node_names();

// What this process has sent to ranks on other nodes since init_comm, over every Comm: the
// payload bytes and the number of MPI messages carrying them (MPI adds a header to each).
// MPI's own collectives (broadcast, barrier, split's exchange) are not in it: they carry a few
// bytes outside the training loop.
struct CrossNodeTraffic {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};
CrossNodeTraffic cross_node_traffic();

// Pure helper (tested without MPI): nodes numbered by first appearance, given each rank's node
// label (any ids, e.g. the lowest world rank on that node).
std::vector<int> number_nodes(const std::vector<int>& node_label_of_rank);

// Pure helper: the ranks of `group` (world ranks) that live on other nodes than `self`, node by
// node in the order they appear: "ranks 2, 3 on node b; rank 5 on node c". Empty when the whole
// group shares self's node. A hang in such an operation may be that node's death or its link's.
std::string off_node_ranks_text(const std::vector<int>& group, int self, const std::vector<int>& rank_nodes,
                                const std::vector<std::string>& names);

}  // namespace ff
