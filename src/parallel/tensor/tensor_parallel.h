#pragma once
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) with optional sequence parallelism
// (Korthikanti et al. 2022), applied from outside the model: tensor_plan.h cuts the parameters,
// tensor_hooks.h implements the model's parallel operations with regions.h, and
// ReplicaGradSync sums the gradients of the tensors whose replicas each saw only part of the
// work. Checkpoints stay layout-free: full tensors are assembled from, and cut back into, the
// ranks' blocks.
#include <memory>
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

// Checkpoints: every tp rank's flat block (`local`, layout sliced for that rank) into the full
// tensors' flat layout of the same model parts (a pipeline stage's, or by default all), on every
// rank (collective over tp).
void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts = nullptr);
// This rank's blocks out of a full flat buffer.
void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                           const float* full, float* local);

}  // namespace ff
