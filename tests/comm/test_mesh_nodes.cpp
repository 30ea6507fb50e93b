// MPI-free: the node-aware rank order and the tp-across-nodes warning, against hand-written
// placements (what mpirun's --map-by slot and --map-by node give on two nodes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/mesh.h"
#include "comm/nodes.h"

using namespace ff;

TEST(MeshNodes, NodesAreNumberedByFirstAppearance) {
  EXPECT_EQ(number_nodes({7, 7, 3, 3}), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(number_nodes({0, 2, 0, 2}), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(number_nodes({}), std::vector<int>{});
}

// The watchdog's words for a hang across nodes: the group's ranks elsewhere, node by node.
TEST(MeshNodes, OffNodeRanksAreNamedByNode) {
  const std::vector<std::string> names = {"alpha", "beta", "gamma"};
  const std::vector<int> nodes = {0, 0, 1, 1, 2, 2};
  EXPECT_EQ(off_node_ranks_text({0, 1, 2, 3}, 0, nodes, names), "ranks 2, 3 on node beta");
  EXPECT_EQ(off_node_ranks_text({0, 1, 2, 3}, 3, nodes, names), "ranks 0, 1 on node alpha");
  EXPECT_EQ(off_node_ranks_text({5, 0, 2}, 1, nodes, names), "rank 5 on node gamma; rank 2 on node beta");
  EXPECT_EQ(off_node_ranks_text({0, 1}, 1, nodes, names), "");  // all on this rank's node
  EXPECT_EQ(off_node_ranks_text({0, 1}, 0, {}, {}), "");        // no node map (before init_comm)
}

TEST(MeshNodes, ConsecutiveRanksPerNodeKeepTheLaunchOrder) {
  EXPECT_EQ(mesh_rank_order({0, 0, 0, 0}), (std::vector<int>{0, 1, 2, 3}));  // one node
  EXPECT_EQ(mesh_rank_order({0, 0, 1, 1}), (std::vector<int>{0, 1, 2, 3}));  // --map-by slot
  EXPECT_EQ(mesh_rank_order({0}), (std::vector<int>{0}));
}

TEST(MeshNodes, InterleavedRanksAreGatheredNodeByNode) {
  // --map-by node: ranks 0, 2 on the first node, 1, 3 on the second.
  EXPECT_EQ(mesh_rank_order({0, 1, 0, 1}), (std::vector<int>{0, 2, 1, 3}));
  // Three nodes, uneven, labels in any order: each node's ranks stay in launch order.
  EXPECT_EQ(mesh_rank_order({5, 9, 5, 2, 9, 5}), (std::vector<int>{0, 2, 5, 1, 4, 3}));
}

TEST(MeshNodes, TpInsideNodesGivesNoWarning) {
  const std::vector<int> two_by_two{0, 0, 1, 1}, identity{0, 1, 2, 3};
  EXPECT_EQ(mesh_node_warning(MeshDegrees{.dp = 2, .tp = 2}, two_by_two, identity), "");
  EXPECT_EQ(mesh_node_warning(MeshDegrees{.tp = 2, .pp = 2}, two_by_two, identity), "");
  EXPECT_EQ(mesh_node_warning(MeshDegrees{.dp = 4}, two_by_two, identity), "");  // dp may cross
  EXPECT_EQ(mesh_node_warning(MeshDegrees{.tp = 4}, {0, 0, 0, 0}, identity), "");  // one node
}

TEST(MeshNodes, TpAcrossNodesIsNamed) {
  const std::string w = mesh_node_warning(MeshDegrees{.tp = 4}, {0, 0, 1, 1}, {0, 1, 2, 3});
  EXPECT_NE(w.find("tp group of ranks {0, 1, 2, 3}"), std::string::npos) << w;
  EXPECT_NE(w.find("nodes 0 and 1"), std::string::npos) << w;
  EXPECT_NE(w.find("ranks per node (2 here)"), std::string::npos) << w;
  // One rank per node: every tp pair crosses; the first is named by its launch ranks.
  const std::string one = mesh_node_warning(MeshDegrees{.dp = 2, .tp = 2}, {0, 1, 2, 3}, {0, 1, 2, 3});
  EXPECT_NE(one.find("{0, 1}"), std::string::npos) << one;
  EXPECT_NE(one.find("(1 here)"), std::string::npos) << one;
}
