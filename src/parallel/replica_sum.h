#pragma once
// The gradient sum of a parameter group's replicated tensors (param_group.h: ReplicaRange): a
// GradSink in front of the group state's own, which sums the copies' partial gradients over the
// ranks holding them as each segment is released, before the group's data-parallel reduction
// (DDP or ZeRO) takes the segment over.
#include <utility>
#include <vector>

#include "model/param_access.h"
#include "parallel/param_group.h"

namespace ff {

class ReplicaSum final : public GradSink {
 public:
  // The ranges of `layout` with a communicator to sum over; none: the group needs no ReplicaSum.
  explicit ReplicaSum(const GroupLayout& layout);
  bool empty() const { return runs_.empty(); }
  // inner: the group state's sink for this micro-batch. sum: whether this micro-batch's release
  // sums. A state whose buffers accumulate the micro-batches (DDP, ZeRO-1) sums once, on the
  // step's last micro-batch, which keeps the sum linear; staging buffers (ZeRO-2/3) every time.
  void begin(GradSink& inner, bool sum);
  TypedPtr acquire(const ParamSegment& seg) override;
  void release(const ParamSegment& seg) override;

 private:
  struct Run {
    size_t offset, count;  // group coordinates
    const Comm* over;
  };
  std::vector<Run> runs_;
  GradSink* inner_ = nullptr;
  bool sum_ = false;
  std::vector<std::pair<ParamSegment, float*>> held_;
};

}  // namespace ff
