#pragma once
// DDP's gradient side: a GradSink over the full gradient buffer that groups segments into
// buckets (in the order backward finishes them: head, last block ... first block, embedding) and
// starts each bucket's all-reduce the moment its last segment is released, so communication of
// bucket k overlaps the backward of bucket k+1. Only the step's last micro-batch communicates.
// The last bucket (the embedding's) has no backward left to hide behind: from 1 MiB on it moves
// only the chunks some rank wrote (sparse_all_reduce.h, the same bits), unless most of it was
// written (then densely, after the flags' round trip).
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "io/trace.h"
#include "model/param_access.h"
#include "parallel/data/sparse_all_reduce.h"
#include "parallel/grad_wire.h"
#include "parallel/param_group.h"

namespace ff {

class BucketedAllReduce final : public GradSink {
 public:
  BucketedAllReduce(const GroupLayout& layout, float* grads, const Comm& comm, size_t bucket_elems,
                    bool overlap, Tracer* tracer, DType wire = DType::f32);
  void set_sync(bool sync) { sync_ = sync; }
  TypedPtr acquire(const ParamSegment& seg) override;
  void release(const ParamSegment& seg) override;
  void finish();  // waits for every bucket started this step

  // The last bucket tries the sparse path from this size on (1 MiB): below it the tail is short
  // and the flags' extra round trip and bytes are not worth it.
  static constexpr size_t kSparseLastBucketMin = size_t(1) << 18;
  struct Bucket {
    size_t lo, hi;  // flat range; buckets are contiguous and cover [0, total)
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Buckets over segments laid out back to back from offset 0 up to `total`, in backward's order
  // (highest offsets first): consecutive segments while they fit in bucket_elems, a larger segment
  // alone.
  static std::vector<Bucket> plan_buckets(const std::vector<ParamSegment>& segments, size_t total,
                                          size_t bucket_elems);

 private:
  void start(size_t b);

  float* grads_;
  const Comm& comm_;
  Tracer* tracer_;
  std::vector<Bucket> buckets_;  // in completion order: highest offsets first
  std::vector<std::pair<size_t, std::string>> segment_names_;  // offset -> "block 3", for traces
  std::vector<CommRequest> inflight_;
  GradWire wire_;  // grad_reduce_dtype = bf16: the buckets travel in bf16 (accounted as gradients)
  SparseAllReduce last_;  // the last bucket, when few of its chunks were written (fp32 wire only)
  size_t next_bucket_ = 0;
  bool sync_ = false;
  bool overlap_ = true;
  double acquire_us_ = 0;
};

}  // namespace ff
