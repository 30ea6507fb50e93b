#pragma once
// ZeRO stage 0: every rank holds the whole state of its parameter group; gradients are summed by bucketed
// all-reduce overlapped with backward (DDP). With no group (one process) it is the serial state.
#include <memory>

#include "core/memory.h"
#include "parallel/data/ddp.h"
#include "parallel/model_state.h"

namespace ff {

class ReplicatedState final : public ModelState {
 public:
  ReplicatedState(const GroupLayout& layout, const AdamWConfig& adam, const DataParallelConfig& cfg,
                  const Comm* dp, Tracer* tracer);
  ParamSource& params() override { return source_; }
  GradSink& grads(bool sync) override;
  void zero_grads() override;
  void finish_grads() override;
  double grad_square_sum(const std::vector<WeightedRange>& weights) override;
  bool grads_accumulate() const override { return true; }
  void scale_grads(float s) override;
  void optimizer_step(float lr, int step) override;
  void init_parameters(const ModelConfig& c, uint64_t seed) override;
  void gather_full(float* params, float* m, float* v) override;
  StateRuns checkpoint_runs(bool for_save) override;
  float* segment_grads(const ParamSegment& seg, size_t* count) override {
    *count = seg.count;
    return grads_.data() + seg.offset;
  }
  // For the modes that exchange parameters rather than gradients (local_replica_state.h).
  float* param_data() { return params_.data(); }
  float* grad_data() { return grads_.data(); }

 private:
  const GroupLayout& layout_;
  TrackedBuffer<float> params_, grads_;
  AdamW adam_;
  FlatParams source_;
  FlatGrads local_sink_;
  std::unique_ptr<BucketedAllReduce> ddp_;  // null without a group of 2 or more
  int comm_rank_ = 0;  // in the group's communicator: only rank 0 saves the replicated state
};

}  // namespace ff
