#include "parallel/tensor/tensor_replicas.h"

#include "parallel/tensor/tensor_plan.h"

namespace ff {

namespace {

bool is_kv(const ParamView& v) { return style_of(v.name) != TensorStyle::replicated; }

}  // namespace

std::vector<ReplicaRange> tensor_replica_ranges(const ParamLayout& layout, bool sp, const Comm* tp,
                                                const Comm* kv_group) {
  std::vector<ReplicaRange> ranges;
  for (const ParamView& v : layout.views()) {
    if (v.replicas <= 1) continue;
    const Comm* over = !replica_grads_are_partial(v, sp) ? nullptr : is_kv(v) ? kv_group : tp;
    ranges.push_back({v.offset, v.numel, v.replicas, over});
  }
  return ranges;
}

TensorReplicas::TensorReplicas(const ParamLayout& layout, const Comm& tp, bool sp) {
  int color = tp.rank();  // ranks sharing a kv head hold the same block: same row0
  for (const ParamView& v : layout.views())
    if (replica_grads_are_partial(v, sp) && is_kv(v)) color = int(v.row0);
  kv_group_ = tp.split(color, tp.rank());
  ranges_ = tensor_replica_ranges(layout, sp, &tp, &kv_group_);
}

}  // namespace ff
