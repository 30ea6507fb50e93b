#pragma once
// A node's cores split into ranks x threads, searched by `plan` beside the layout: the same cores
// run as many one-thread ranks (data parallelism's gradient exchange, a copy of the model each)
// or as fewer ranks of several threads (kernels that scale below one core per thread,
// plan/thread_scaling.h). Which is faster depends on the model and the machine, so the planner
// predicts every split and ranks the layouts of all of them together.
#include <string>
#include <vector>

#include "plan/search.h"

namespace ff {

struct SplitRequest {
  int nodes = 1;
  int cores = 1;           // per node
  int ranks_per_node = 0;  // 0: searched (the divisors of the cores)
  int threads = 0;         // per rank; 0: searched (the divisors of the cores a rank gets)
  // Search the splits that fill the cores twice over too: search_splits sets it where other work
  // shares the machine, so that more threads get more of the cores (EngineRates::usable_cores).
  bool oversubscribe = false;
};

struct NodeSplit {
  int ranks_per_node = 1, threads = 1;
  int threads_per_node() const { return ranks_per_node * threads; }
};

// The splits to predict: what the request fixes, the rest searched so that ranks x threads fill
// the cores or fewer (and, with `oversubscribe`, fill them exactly twice). A pair the request
// fixes may oversubscribe (oversubscription() names it).
std::vector<NodeSplit> node_splits(const SplitRequest& r);
// "" when the split fits the cores; else the sentence that names the oversubscription.
std::string oversubscription(const NodeSplit& s, int cores);

// The cluster as `ranks_per_node` ranks on each node see it: the node's memory and peak shared
// among them (the cluster file describes devices_per_node ranks per node).
ClusterSpec cluster_for_split(const ClusterSpec& cl, int ranks_per_node);

// search_layouts for every split (base: the global batch and micro-batch limit; its ranks and
// threads are the split's), each layout carrying its threads, all ranked together by step time.
PlanResult search_splits(const ModelConfig& c, const ClusterSpec& cl, const SplitRequest& s, const PlanRequest& base);

}  // namespace ff
