#pragma once
// Gradients of tensors that several tensor-parallel ranks hold whole (norm weights, the replicated
// k/v heads): each replica saw only its part of the work, so their gradients are partial sums.
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "model/param_access.h"
#include "model/parameters.h"
#include "parallel/model_state.h"

namespace ff {

// A GradSink in front of the data-parallel one: when a segment's gradient is final it sums the
// partial gradients of replicated tensors (tensor_plan.h: replica_grads_are_partial) over the
// ranks holding them, then releases the segment downstream (where DDP or ZeRO takes over).
class ReplicaGradSync final : public GradSink {
 public:
  // Collective over tp (splits the groups of ranks sharing a kv head).
  ReplicaGradSync(const ParamLayout& layout, const Comm& tp, bool sequence_parallel);
  // inner: the data-parallel sink for this micro-batch. accumulating: inner's buffers carry the
  // sum of earlier micro-batches (DDP, ZeRO-1), so replicas are summed once, on the step's last
  // micro-batch (last), which keeps the sum linear; otherwise (ZeRO-2/3 staging) every time.
  void begin(GradSink& inner, bool accumulating, bool last);
  TypedPtr acquire(const ParamSegment& seg) override;
  void release(const ParamSegment& seg) override;

 private:
  struct Range {
    size_t offset, count;  // flat layout
    bool kv;               // summed over the kv-head group, else over all of tp
  };
  std::vector<Range> ranges_;
  const Comm& tp_;
  Comm kv_group_;
  GradSink* inner_ = nullptr;
  bool active_ = false;
  std::vector<std::pair<ParamSegment, float*>> held_;
};

// The sink one micro-batch's backward writes into: the state's (which communicates only when
// `last`, the step's final micro-batch), behind `replicas` when there is tensor parallelism.
GradSink& micro_batch_sink(ModelState& state, ReplicaGradSync* replicas, bool last);

// Weight of each element in the global gradient norm: 1 / (ranks holding it), so that summing
// every rank's weighted squares counts each distinct element once.
std::vector<WeightedRange> replica_norm_weights(const ParamLayout& layout);

}  // namespace ff
