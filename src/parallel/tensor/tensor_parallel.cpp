#include "parallel/tensor/tensor_parallel.h"

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

void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts) {
  const size_t n = local_layout.total(), t = size_t(tp.size());
  std::vector<float> all(n * t);
  tp.all_gather(local, all.data(), n * t);
  const ParamLayout full_layout(c, nullptr, parts);
  for (int r = 0; r < tp.size(); ++r) {
    const PlanSlicer slicer(c, tp.size(), r);
    const ParamLayout theirs(c, &slicer, parts);
    const float* src = all.data() + size_t(r) * n;
    for (size_t i = 0; i < theirs.views().size(); ++i) {
      const ParamView& v = theirs.views()[i];
      float* dst = full + full_layout.views()[i].offset;
      for (size_t e = 0; e < v.numel; ++e) dst[v.full_index(e)] = src[v.offset + e];
    }
  }
}

void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                           const float* full, float* local) {
  for (size_t i = 0; i < local_layout.views().size(); ++i) {
    const ParamView& v = local_layout.views()[i];
    const float* src = full + full_layout.views()[i].offset;
    for (size_t e = 0; e < v.numel; ++e) local[v.offset + e] = src[v.full_index(e)];
  }
}

}  // namespace ff
