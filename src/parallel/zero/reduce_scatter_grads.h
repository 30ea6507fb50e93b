#pragma once
// ZeRO-2/3's gradient side: a GradSink that hands backward a zeroed full-size staging buffer per
// segment and, on release, reduce-scatters it so each rank adds only its chunk into its gradient
// shard. Two staging buffers alternate, so the next segment's backward runs while the previous
// segment's reduce-scatter is in flight; the full gradient never exists on any rank.
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "io/trace.h"
#include "model/param_access.h"
#include "parallel/grad_wire.h"
#include "parallel/zero/shard_layout.h"

namespace ff {

class ReduceScatterGrads final : public GradSink {
 public:
  // wire bf16: each segment is rounded into a bf16 staging copy and reduce-scattered in bf16
  // (grad_wire.h); the chunk is widened and added into the fp32 shard.
  ReduceScatterGrads(const ShardLayout& shards, float* grad_shard, const Comm& comm, Tracer* tracer,
                     DType wire = DType::f32);
  TypedPtr acquire(const ParamSegment& seg) override;
  void release(const ParamSegment& seg) override;
  void finish();  // waits for every reduce-scatter and folds it into the shard

 private:
  struct Stage {
    TrackedBuffer<float> full;   // (segment) this rank's local gradient
    TrackedBuffer<float> mine;   // (chunk) the reduce-scatter's result
    GradWire wire_full, wire_mine;  // their bf16 copies (grad_reduce_dtype = bf16 only)
    const ShardedSegment* seg = nullptr;
    CommRequest pending;
    bool has_pending = false;
  };
  void complete(Stage& st);

  const ShardLayout& shards_;
  float* grad_shard_;
  const Comm& comm_;
  Tracer* tracer_;
  Stage stages_[2];
  int next_ = 0;
  std::vector<Stage*> held_;  // acquired, not yet released (the tied embedding spans backward)
};

}  // namespace ff
