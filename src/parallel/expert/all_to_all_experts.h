#pragma once
// Expert parallelism's exchange (the MoE block's delegate, model/expert_exchange.h): the experts
// are split over the ep group (rank r holds experts [r El, (r + 1) El)), so a rank sends each
// routed token to the rank of its expert. Per MoE block and micro-batch: the counts go first (one
// all_to_all of El ints per peer), then the rows with all_to_allv, forward (dispatch, combine)
// and backward (the same two, on the gradients).
//
// Bytes per rank of one exchange of `width` floats: 4 * width * (rows sent, every peer and itself
// included) for dispatch, 4 * width * (rows received) for combine (tested against the routed
// counts in tests/expert/).
#include <cstdint>
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "model/expert_exchange.h"

namespace ff {

class AllToAllExperts final : public ExpertExchange {
 public:
  // max_rows: routes one rank sends per micro-batch at most (N k); rows of up to `width` floats.
  AllToAllExperts(const Comm& ep, size_t max_rows, int width);
  int ep() const override { return ep_->size(); }
  void exchange_counts(const int32_t* sent, int32_t* received, int E) override;
  void dispatch(const float* send, float* recv, int width, const int32_t* counts, int E) override;
  void combine(const float* recv, float* send, int width, const int32_t* counts, int E) override;

 private:
  // Floats to and from each peer, and the (source, local expert) blocks' offsets in the
  // source-major staging buffer and the expert-major output.
  struct Plan {
    std::vector<size_t> send, recv;
    std::vector<size_t> staged_at, grouped_at, block;  // per (source, local expert), source-major
  };
  Plan plan(const int32_t* counts, int E, int width) const;

  const Comm* ep_;
  TrackedBuffer<float> staging_;  // rows as they arrive: by source rank, then local expert
};

}  // namespace ff
