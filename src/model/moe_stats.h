#pragma once
// What the MoE blocks' routing did during a step, per layer: the numbers metrics.jsonl reports
// (tokens per expert, dropped tokens, the auxiliary and z losses) and what the aux-loss-free
// router bias is updated from. Collected by the training forward only (a recomputing forward does
// not count twice); the trainer resets it at the start of each step and sums it over the ranks.
#include <cstddef>
#include <vector>

namespace ff {

struct MoeLayerStats {
  std::vector<double> routed;  // (E) routes chosen per global expert, before capacity dropping
  double tokens = 0;           // tokens routed (each counts top_k routes)
  double dropped = 0;          // routes dropped for capacity
  double aux_sum = 0;          // sum over micro-batches of N * aux loss (a sum like the CE's)
  double z_sum = 0;            // sum over micro-batches of N * z-loss
};

struct MoeStats {
  std::vector<MoeLayerStats> layers;  // by global layer; routed empty for a dense block

  void reset() {
    for (MoeLayerStats& l : layers) {
      std::fill(l.routed.begin(), l.routed.end(), 0.0);
      l.tokens = l.dropped = l.aux_sum = l.z_sum = 0;
    }
  }
  // What the balancing terms add to the sum of token losses.
  double loss_sum() const {
    double s = 0;
    for (const MoeLayerStats& l : layers) s += l.aux_sum + l.z_sum;
    return s;
  }
  bool any() const {
    for (const MoeLayerStats& l : layers)
      if (!l.routed.empty()) return true;
    return false;
  }
};

}  // namespace ff
