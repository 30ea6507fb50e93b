#include "parallel/tensor/replica_grads.h"

#include <algorithm>
#include <stdexcept>

#include "parallel/tensor/tensor_plan.h"

namespace ff {

ReplicaGradSync::ReplicaGradSync(const ParamLayout& layout, const Comm& tp, bool sp) : tp_(tp) {
  int kv_group = tp.rank();  // ranks sharing a kv head hold the same block: same row0
  for (const ParamView& v : layout.views()) {
    if (!replica_grads_are_partial(v, sp)) continue;
    const bool kv = style_of(v.name) != TensorStyle::replicated;
    if (kv) kv_group = int(v.row0);
    // Adjacent tensors of one group (k then v, say) go out as one all-reduce.
    if (!ranges_.empty() && ranges_.back().kv == kv &&
        ranges_.back().offset + ranges_.back().count == v.offset)
      ranges_.back().count += v.numel;
    else
      ranges_.push_back({v.offset, v.numel, kv});
  }
  kv_group_ = tp.split(kv_group, tp.rank());
}

void ReplicaGradSync::begin(GradSink& inner, bool accumulating, bool last) {
  inner_ = &inner;
  active_ = !accumulating || last;
}

TypedPtr ReplicaGradSync::acquire(const ParamSegment& seg) {
  float* g = inner_->acquire(seg).f32();
  held_.emplace_back(seg, g);
  return g;
}

void ReplicaGradSync::release(const ParamSegment& seg) {
  auto it = std::find_if(held_.begin(), held_.end(),
                         [&](const auto& h) { return h.first.offset == seg.offset; });
  if (it == held_.end()) throw std::logic_error("ReplicaGradSync: release without acquire");
  float* base = it->second;
  held_.erase(it);
  if (active_)
    for (const Range& r : ranges_) {
      if (r.offset < seg.offset || r.offset >= seg.end()) continue;
      (r.kv ? kv_group_ : tp_).all_reduce(base + (r.offset - seg.offset), r.count);
    }
  inner_->release(seg);
}

GradSink& micro_batch_sink(ModelState& state, ReplicaGradSync* replicas, bool last) {
  GradSink& inner = state.grads(last);
  if (!replicas) return inner;
  replicas->begin(inner, state.grads_accumulate(), last);
  return *replicas;
}

std::vector<WeightedRange> replica_norm_weights(const ParamLayout& layout) {
  std::vector<WeightedRange> w;
  for (const ParamView& v : layout.views())
    if (v.replicas > 1) w.push_back({v.offset, v.numel, 1.0 / v.replicas});
  return w;
}

}  // namespace ff
