#pragma once
// ZeRO stages 1-3 of one parameter group over its communicator (see shard_layout.h for who owns what).
//   stage 1: full parameters and gradients; AdamW moments sharded. Each segment's gradient is
//            reduce-scattered as soon as the last micro-batch's backward releases it; each rank
//            updates its chunk and the chunks are all-gathered back into every replica.
//   stage 2: as 1, but backward writes into staging buffers that are reduce-scattered into a
//            gradient shard at once (ReduceScatterGrads), so no rank holds the full gradient.
//   stage 3: as 2, and the parameters too live only as shards, gathered segment by segment just
//            before use, with the next segment prefetched (GatherPool).
#include <memory>

#include "core/memory.h"
#include "parallel/zero/gather_pool.h"
#include "parallel/model_state.h"
#include "parallel/zero/reduce_scatter_grads.h"
#include "parallel/zero/shard_layout.h"

namespace ff {

class ShardedState final : public ModelState {
 public:
  // gather_dtype: what ZeRO-3 all-gathers parameters in (16-bit: half the bytes, gather_pool.h);
  // wire: the dtype gradients are reduce-scattered in (grad_wire.h).
  ShardedState(const GroupLayout& layout, const AdamWConfig& adam, int stage, const Comm& dp,
               Tracer* tracer, DType gather_dtype = DType::f32, DType wire = DType::f32);
  ~ShardedState() override;
  ParamSource& params() override;
  GradSink& grads(bool sync) override;
  void zero_grads() override;
  void finish_grads() override;
  double grad_square_sum(const std::vector<WeightedRange>& weights) override;
  bool grads_accumulate() const override { return stage_ == 1; }
  void scale_grads(float s) override;
  void optimizer_step(float lr, int step) override;
  void init_parameters(const ModelConfig& c, uint64_t seed) override;
  void gather_full(float* params, float* m, float* v) override;
  StateRuns checkpoint_runs(bool for_save) override;
  void after_load() override;
  float* segment_grads(const ParamSegment& seg, size_t* count) override {
    const ShardedSegment& s = shards_.of(seg);
    *count = s.mine.count;
    return grad_shard_.data() + s.shard_at;
  }
  const GatherPool* gather_pool() const { return gather_.get(); }  // stage 3 only
  // Stage 3 with 16-bit gathers: the gather buffers, which the GEMMs read as the weights' twins.
  std::vector<const WeightTwinSource*> weight_twins() const override;

 private:
  class Stage1Sink;
  void gather_segments(const float* shard, float* full);  // every segment's chunks into `full`

  const GroupLayout& layout_;
  int stage_;
  const Comm& comm_;
  ShardLayout shards_;
  TrackedBuffer<float> params_;      // full (stages 1, 2) or this rank's shard (stage 3)
  TrackedBuffer<float> full_grads_;  // stage 1 only
  TrackedBuffer<float> grad_shard_;
  AdamW adam_;
  FlatParams flat_source_;
  std::unique_ptr<GatherPool> gather_;            // stage 3
  std::unique_ptr<ReduceScatterGrads> rs_sink_;   // stages 2, 3
  std::unique_ptr<Stage1Sink> stage1_sink_;       // stage 1
};

}  // namespace ff
