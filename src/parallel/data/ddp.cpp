#include "parallel/data/ddp.h"

#include <string>

namespace ff {

BucketedAllReduce::BucketedAllReduce(const GroupLayout& layout, float* grads, const Comm& comm,
                                     size_t bucket_elems, bool overlap, Tracer* tracer, DType wire)
    : grads_(grads), comm_(comm), tracer_(tracer), wire_(wire, layout.total(), MemCategory::grads), overlap_(overlap) {
  // Segments in completion order. A bucket takes segments while they fit in bucket_elems and
  // closes before one that would overflow it, so a large segment is a bucket of its own and small
  // ones share. Closing only once a bucket had reached the size instead glued the segment after a
  // just-too-small one to it: that bucket then waited for its second segment's backward, and at
  // the end of backward the last blocks' gradients went out together with the embedding's, all
  // exposed (dp across a 1 Gbit/s link: bench/multinode/overlap.py).
  for (size_t i = layout.segments().size(); i-- > 0;)
    segment_names_.push_back({layout.segments()[i].offset, layout.segment_name(i)});
  buckets_ = plan_buckets(layout.segments(), layout.total(), bucket_elems);
}

std::vector<BucketedAllReduce::Bucket> BucketedAllReduce::plan_buckets(const std::vector<ParamSegment>& segments,
                                                                       size_t total, size_t bucket_elems) {
  std::vector<Bucket> buckets;
  size_t hi = total;  // the open bucket is [segment offset, hi)
  for (size_t i = segments.size(); i-- > 0;) {
    const size_t lo = segments[i].offset;
    const size_t seg_end = i + 1 < segments.size() ? segments[i + 1].offset : total;
    if (seg_end < hi && hi - lo > bucket_elems) {  // open and this segment would overflow it
      buckets.push_back({seg_end, hi});
      hi = seg_end;
    }
  }
  if (hi > 0) buckets.push_back({0, hi});
  return buckets;
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
    if (b + 1 == buckets_.size() && k.hi - k.lo >= kSparseLastBucketMin) {
      last_.begin(grads_ + k.lo, k.hi - k.lo, comm_);
      inflight_.emplace_back();  // finish() decides: the written chunks, or a dense all-reduce
      return;
    }
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
  const bool last_begun = last_.begun();
  const bool sparse = last_begun && last_.reduce();
  if (last_begun && !sparse) {
    const Bucket& k = buckets_.back();
    inflight_.back() = comm_.all_reduce_async(grads_ + k.lo, k.hi - k.lo);
  }
  for (size_t i = 0; i < inflight_.size(); ++i) {
    inflight_[i].wait();
    // Buckets start in order, so request i carried bucket i.
    if (wire_.active()) wire_.widen_out(grads_ + buckets_[i].lo, buckets_[i].lo, buckets_[i].hi - buckets_[i].lo);
    if (tracer_ && !(sparse && i + 1 == buckets_.size()))
      tracer_->span("all-reduce bucket " + std::to_string(i), "comm", inflight_[i].started_us(),
                    inflight_[i].completed_us());
  }
  if (sparse) {
    last_.finish();
    if (tracer_)
      tracer_->span("sparse all-reduce bucket " + std::to_string(buckets_.size() - 1), "comm", last_.started_us(),
                    last_.completed_us());
  }
  inflight_.clear();
  next_bucket_ = 0;
}

}  // namespace ff
