#pragma once
// The tensors several tensor-parallel ranks hold whole (tensor_plan.h: the RMSNorm weights on every
// rank, a kv head on the t/Hkv ranks whose query heads read it), as replica ranges of the
// parameter groups (param_group.h), which sum their partial gradients and weight their copies in
// the gradient norm.
#include <vector>

#include "comm/comm.h"
#include "model/parameters.h"
#include "parallel/param_group.h"

namespace ff {

// One range per replicated tensor of `layout`, ascending, summed (tensor_plan.h:
// replica_grads_are_partial) over `tp` (norm weights under sequence parallelism: each rank saw
// only its rows) or `kv_group` (a shared kv head: each rank added its query heads' part), or not
// at all (norm weights without sp, computed whole on every rank). With null communicators no range
// is summed: only the norm weights remain.
std::vector<ReplicaRange> tensor_replica_ranges(const ParamLayout& layout, bool sequence_parallel,
                                                const Comm* tp, const Comm* kv_group);

// The ranges of this rank's tensors, and the communicator of the ranks sharing its kv head.
class TensorReplicas {
 public:
  // Collective over tp (splits it into the groups of ranks sharing a kv head).
  TensorReplicas(const ParamLayout& layout, const Comm& tp, bool sequence_parallel);
  TensorReplicas(const TensorReplicas&) = delete;  // the ranges point at kv_group_
  TensorReplicas& operator=(const TensorReplicas&) = delete;
  const std::vector<ReplicaRange>& ranges() const { return ranges_; }

 private:
  Comm kv_group_;
  std::vector<ReplicaRange> ranges_;
};

}  // namespace ff
