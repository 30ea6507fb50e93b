#pragma once
// Comm's node-first collectives (comm/hierarchical*.cpp) as the planner costs them. A group with
// L >= 2 of its ranks on each of N >= 2 nodes runs an all-reduce, reduce-scatter or all-gather of
// at least CommOptions' sizes in stages: inside the node over the same-node link, then across
// between the ranks at one place on each node, with 1/L of the bytes (every rank of a node
// crossing at once, so they share its link). The buffer is cut into blocks whose stages overlap,
// as a pipeline: one block's stages, then the slowest stage once per further block.
#include <memory>

#include "comm/comm_types.h"
#include "plan/cost_rates.h"

namespace ff {

struct NodeFirstForm {
  LinkClass inside;  // the same-node class
  LinkClass across;  // one place's ranks (one per node) as they see the link, every rank crossing
  int nodes = 0, per_node = 0;  // the group's shape: N nodes x L of its ranks on each
  CommOptions thresholds;       // the sizes from which Comm goes node first
  // Whether a group of n ranks runs `op` of `bytes` node first (the buffer's bytes: all-reduce's,
  // reduce-scatter's input, all-gather's output). 16-bit reductions stay flat in Comm; the
  // planner's byte counts do not say which type they carry, so it takes them as fp32's.
  bool applies(Coll op, double bytes, int n) const;
  double seconds(Coll op, double bytes) const;
};

// The form for a group of n ranks, on_one_node of them on each node it spans, inside
// `per_node`-rank nodes; null where Comm would not go node first (one rank per node, uneven).
std::shared_ptr<const NodeFirstForm> node_first_form(const LinkClass& same_node, const LinkClass& across_nodes, int n,
                                                     int on_one_node, int per_node);

}  // namespace ff
