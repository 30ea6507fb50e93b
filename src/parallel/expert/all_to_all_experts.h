#pragma once
// Expert parallelism's exchange (the MoE block's delegate, model/expert_exchange.h): the experts
// are split over the ep group (rank r holds experts [r El, (r + 1) El)), so a rank sends each
// routed token to the rank of its expert. Per MoE block and micro-batch: the counts go first (one
// all_to_all of El ints per peer), then the rows with all_to_allv, forward (dispatch, combine)
// and backward (the same two, on the gradients).
//
// With `overlap` the rows' all_to_allv runs asynchronously from `*_begin` to `*_end` (the comm
// engine's thread moves it while the block computes its shared experts or its router backward);
// without, `*_begin` finishes it. Same bytes, same arithmetic: the results are bitwise equal
// (tests/expert/). `timing()` tells how much of the exchange was exposed.
//
// Bytes per rank of one exchange of `width` floats: 4 * width * (rows sent, every peer and itself
// included) for dispatch, 4 * width * (rows received) for combine (tested against the routed
// counts in tests/expert/).
#include <cstdint>
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "io/trace.h"
#include "model/expert_exchange.h"

namespace ff {

// Time of the rows' exchanges since the last reset, in microseconds.
struct ExchangeTiming {
  double wait_us = 0;  // the caller blocked on them: the exposed part
  double comm_us = 0;  // start to completion of each: what overlap may hide
  long exchanges = 0;
};

class AllToAllExperts final : public ExpertExchange {
 public:
  // max_rows: routes one rank sends per micro-batch at most (N k); rows of up to `width` floats.
  // tracer (may be null): each exchange's span on "ep comm", the caller's wait on "ep wait".
  AllToAllExperts(const Comm& ep, size_t max_rows, int width, bool overlap = false, Tracer* tracer = nullptr);
  int ep() const override { return ep_->size(); }
  void exchange_counts(const int32_t* sent, int32_t* received, int E) override;
  void dispatch_begin(const float* send, float* recv, int width, const int32_t* counts, int E) override;
  void dispatch_end() override;
  void combine_begin(const float* recv, float* send, int width, const int32_t* counts, int E) override;
  void combine_end() override;
  const ExchangeTiming& timing() const { return timing_; }
  void reset_timing() { timing_ = {}; }

 private:
  // Floats to and from each peer, and the (source, local expert) blocks' offsets in the
  // source-major staging buffer and the expert-major output.
  struct Plan {
    std::vector<size_t> send, recv;
    std::vector<size_t> staged_at, grouped_at, block;  // per (source, local expert), source-major
  };
  Plan plan(const int32_t* counts, int E, int width) const;
  // Waits for the exchange in flight (timed, traced as `what`).
  void finish(const char* what);

  const Comm* ep_;
  bool overlap_;
  Tracer* tracer_;
  TrackedBuffer<float> staging_;  // rows as they arrive: by source rank, then local expert
  CommRequest pending_;           // the rows' all_to_allv between *_begin and *_end
  Plan dispatching_;              // the dispatch in flight: where its rows go on arrival
  float* dispatch_to_ = nullptr;  // null: no dispatch in flight
  bool combining_ = false;        // a combine in flight
  ExchangeTiming timing_;
};

}  // namespace ff
