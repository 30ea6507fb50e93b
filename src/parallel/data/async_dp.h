#pragma once
// Asynchronous data parallelism with bounded staleness s (max_staleness): the gradient of step t
// is all-reduced in the background while the next s steps compute, and applied at step t + s
// (delayed-gradient SGD; s = 0 is synchronous DP). A replica waits only for the all-reduce of
// step t − s, so it runs up to s steps ahead of the slowest replica and no further: a straggler
// stalls the others only once they are s steps ahead. Every replica applies the same averaged
// gradients, so the replicas stay identical. The first s steps have no gradient to apply and take
// no optimizer step; AdamW's bias correction counts applied updates (step − s).
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "parallel/data/local_replica_state.h"

namespace ff {

class AsyncState final : public LocalReplicaState {
 public:
  AsyncState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
             const DataParallelConfig& cfg, Tracer* tracer);
  ~AsyncState() override;
  // Starts this step's all-reduce; the gradient buffer then holds step t − s's global gradient
  // (zeros while t <= s).
  void finish_grads() override;
  void optimizer_step(float lr, int step) override;
  bool lockstep() const override { return mode().max_staleness == 0; }
  bool applies_gradient() const override { return have_; }

 protected:
  void after_local_step(int) override {}

 private:
  int staleness() const { return mode().max_staleness; }
  std::vector<TrackedBuffer<float>> slots_;  // s + 1 gradients in flight (grads category)
  std::vector<CommRequest> inflight_;
  long produced_ = 0;   // gradients started
  bool have_ = false;   // this step has a delayed gradient to apply
};

}  // namespace ff
