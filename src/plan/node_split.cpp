#include "plan/node_split.h"

#include <algorithm>

#include <fmt/format.h>

namespace ff {

std::vector<NodeSplit> node_splits(const SplitRequest& r) {
  const int cores = std::max(1, r.cores);
  std::vector<NodeSplit> out;
  auto add = [&](int R, int T) {
    for (const NodeSplit& s : out)
      if (s.ranks_per_node == R && s.threads == T) return;
    out.push_back({R, T});
  };
  // Filling the cores or fewer; then, where other work shares the machine (the scheduler gives a
  // job of more threads more of the cores), filling them twice over. On a quiet machine those
  // splits only time-share the cores, at costs (switches, spinning waits) that calibrate's
  // twice-over thread curves measure only in part (its kernels run long parallel regions, a
  // step many short ones), so they are not searched there.
  for (int fill : r.oversubscribe ? std::vector<int>{cores, 2 * cores} : std::vector<int>{cores}) {
    const std::vector<int> ranks = r.ranks_per_node > 0 ? std::vector<int>{r.ranks_per_node} : divisors(fill);
    for (int R : ranks) {
      if (r.threads > 0) {
        add(R, r.threads);
      } else if (fill % R == 0) {
        const std::vector<int> threads = fill == cores ? divisors(fill / R) : std::vector<int>{fill / R};
        for (int T : threads) add(R, T);
      }
    }
  }
  return out;
}

std::string oversubscription(const NodeSplit& s, int cores) {
  if (s.threads_per_node() <= cores) return "";
  return fmt::format("{} ranks per node x {} threads = {} threads on {} cores: oversubscribed, the threads time-share "
                     "the cores (the prediction charges that wait; a split with ranks x threads <= {} avoids it)",
                     s.ranks_per_node, s.threads, s.threads_per_node(), cores, cores);
}

ClusterSpec cluster_for_split(const ClusterSpec& cl, int ranks_per_node) {
  ClusterSpec out = cl;
  const double per_node = std::max(1, cl.devices_per_node), R = std::max(1, ranks_per_node);
  out.devices_per_node = int(R);
  out.memory_bytes = cl.memory_bytes * per_node / R;
  out.peak_flops = cl.peak_flops * per_node / R;
  if (cl.peak_flops_16 > 0) out.peak_flops_16 = cl.peak_flops_16 * per_node / R;
  return out;
}

PlanResult search_splits(const ModelConfig& c, const ClusterSpec& cl, const SplitRequest& s, const PlanRequest& base) {
  PlanResult all;
  all.global_batch = base.global_batch;
  SplitRequest request = s;
  const double C = std::max(1, s.cores);
  request.oversubscribe = cl.engine && cl.rates.usable_cores(2 * C) > cl.rates.usable_cores(C);
  for (const NodeSplit& split : node_splits(request)) {
    PlanRequest req = base;
    req.ranks = split.ranks_per_node * std::max(1, s.nodes);
    req.threads = split.threads;
    PlanResult r = search_layouts(c, cluster_for_split(cl, split.ranks_per_node), req);
    for (LayoutPrediction& p : r.ranked) {
      p.layout.threads = split.threads;
      all.ranked.push_back(std::move(p));
    }
    all.considered += r.considered, all.dropped_memory += r.dropped_memory, all.dropped_batch += r.dropped_batch;
    if (r.smallest_dp_dropped)
      all.smallest_dp_dropped =
          all.smallest_dp_dropped ? std::min(all.smallest_dp_dropped, r.smallest_dp_dropped) : r.smallest_dp_dropped;
  }
  rank_by_step_time(all.ranked);
  return all;
}

}  // namespace ff
