#pragma once
// ZeRO-3's parameter side: a ParamSource that all-gathers a segment from the ranks' shards into
// one of a few full-size buffers just before the model needs it, prefetches the segment the model
// names as next, and lets a buffer be reused once every acquire of its segment is released.
// Three buffers suffice: the head and (tied) the embedding may be held together while the next
// segment is in flight.
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "io/trace.h"
#include "model/param_access.h"
#include "parallel/zero/shard_layout.h"

namespace ff {

class GatherPool final : public ParamSource {
 public:
  GatherPool(const ShardLayout& shards, const float* param_shard, const Comm& comm, Tracer* tracer,
             int buffers = 3);
  ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment& next) override;
  void release(const ParamSegment& seg) override;
  // Parameters changed (optimizer step): every gathered copy is stale.
  void invalidate();
  int gathers() const { return gathers_; }          // collectives issued, for tests
  int prefetch_hits() const { return prefetch_hits_; }  // acquires served by a prefetch

 private:
  struct Slot {
    TrackedBuffer<float> data;
    size_t offset = SIZE_MAX;  // segment held (SIZE_MAX: none)
    int users = 0;
    CommRequest pending;       // the gather filling it, if not yet waited
    bool has_pending = false;
    bool prefetched = false;  // filled ahead of its acquire, not yet acquired since
    uint64_t last_use = 0;
  };
  Slot* find(size_t offset);
  Slot* free_slot(size_t avoid_offset);
  void start_gather(Slot& slot, const ParamSegment& seg);

  const ShardLayout& shards_;
  const float* param_shard_;
  const Comm& comm_;
  Tracer* tracer_;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
  int gathers_ = 0, prefetch_hits_ = 0;
};

}  // namespace ff
