#include "parallel/data/ddp.h"

#include <string>

namespace ff {

BucketedAllReduce::BucketedAllReduce(const GroupLayout& layout, float* grads, const Comm& comm,
                                     size_t bucket_elems, bool overlap, Tracer* tracer, DType wire)
    : grads_(grads), comm_(comm), tracer_(tracer), wire_(wire, layout.total(), MemCategory::grads), overlap_(overlap) {
  // Segments in completion order; a bucket closes once it reaches bucket_elems, so a large
  // segment is a bucket of its own and small ones share.
  std::vector<ParamSegment> order;
  for (size_t i = layout.segments().size(); i-- > 0;) {
    order.push_back(layout.segments()[i]);
    segment_names_.push_back({layout.segments()[i].offset, layout.segment_name(i)});
  }
  size_t hi = layout.total(), lo = hi;
  for (const ParamSegment& seg : order) {
    lo = seg.offset;
    if (hi - lo >= bucket_elems) {
      buckets_.push_back({lo, hi});
      hi = lo;
    }
  }
  if (hi > 0) buckets_.push_back({0, hi});
}

TypedPtr BucketedAllReduce::acquire(const ParamSegment& seg) {
  if (tracer_) acquire_us_ = tracer_->now_us();
  return grads_ + seg.offset;
}

void BucketedAllReduce::release(const ParamSegment& seg) {
  if (tracer_) {
    std::string name = "backward";
    for (const auto& [offset, label] : segment_names_)
      if (offset == seg.offset) name += " " + label;
    tracer_->span(name, "compute", acquire_us_, tracer_->now_us());
  }
  if (!sync_ || !overlap_) return;
  // Backward releases segments from the top of the flat layout down, so everything at or above
  // seg.offset is final: every bucket that starts there is ready.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].lo >= seg.offset) start(next_bucket_++);
}

void BucketedAllReduce::start(size_t b) {
  const Bucket& k = buckets_[b];
  if (!wire_.active()) {
    inflight_.push_back(comm_.all_reduce_async(grads_ + k.lo, k.hi - k.lo));
    return;
  }
  wire_.round_in(grads_ + k.lo, k.lo, k.hi - k.lo);
  inflight_.push_back(comm_.all_reduce_async(wire_.at(k.lo), k.hi - k.lo));
}

void BucketedAllReduce::finish() {
  if (sync_) {
    while (next_bucket_ < buckets_.size()) start(next_bucket_++);  // not overlapped: all now
  }
  for (size_t i = 0; i < inflight_.size(); ++i) {
    inflight_[i].wait();
    // Buckets start in order, so request i carried bucket i.
    if (wire_.active()) wire_.widen_out(grads_ + buckets_[i].lo, buckets_[i].lo, buckets_[i].hi - buckets_[i].lo);
    if (tracer_)
      tracer_->span("all-reduce bucket " + std::to_string(i), "comm", inflight_[i].started_us(),
                    inflight_[i].completed_us());
  }
  inflight_.clear();
  next_bucket_ = 0;
}

}  // namespace ff
