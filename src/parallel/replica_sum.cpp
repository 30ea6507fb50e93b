#include "parallel/replica_sum.h"

#include <algorithm>
#include <stdexcept>

#include "comm/comm.h"

namespace ff {

ReplicaSum::ReplicaSum(const GroupLayout& layout) {
  auto segment_end = [&](size_t offset) {
    for (const ParamSegment& s : layout.segments())
      if (offset >= s.offset && offset < s.end()) return s.end();
    return offset;
  };
  for (const ReplicaRange& r : layout.replicas()) {
    if (!r.sum_over) continue;
    // Adjacent tensors of one segment summed over the same ranks (k then v, say) go out as one
    // all-reduce.
    Run* last = runs_.empty() ? nullptr : &runs_.back();
    if (last && last->over == r.sum_over && last->offset + last->count == r.offset &&
        r.offset + r.count <= segment_end(last->offset))
      last->count += r.count;
    else
      runs_.push_back({r.offset, r.count, r.sum_over});
  }
}

void ReplicaSum::begin(GradSink& inner, bool sum) {
  inner_ = &inner;
  sum_ = sum;
}

TypedPtr ReplicaSum::acquire(const ParamSegment& seg) {
  float* g = inner_->acquire(seg).f32();
  held_.emplace_back(seg, g);
  return g;
}

void ReplicaSum::release(const ParamSegment& seg) {
  auto it =
      std::find_if(held_.begin(), held_.end(), [&](const auto& h) { return h.first.offset == seg.offset; });
  if (it == held_.end()) throw std::logic_error("ReplicaSum: release without acquire");
  float* base = it->second;
  held_.erase(it);
  if (sum_)
    for (const Run& r : runs_)
      if (r.offset >= seg.offset && r.offset < seg.end())
        r.over->all_reduce(base + (r.offset - seg.offset), r.count);
  inner_->release(seg);
}

}  // namespace ff
