#pragma once
// ZeRO-3's parameter side: a ParamSource that all-gathers a segment from the ranks' shards into
// one of a few full-size buffers just before the model needs it, prefetches the segment the model
// names as next, and lets a buffer be reused once every acquire of its segment is released.
// Three buffers suffice: the head and (tied) the embedding may be held together while the next
// segment is in flight.
//
// A 16-bit run (gather dtype bf16/f16) moves half the bytes: the fp32 shard is rounded once per
// optimizer step into a 16-bit shard (2 bytes per element, params), the segments are all-gathered
// in 16 bits, and the model gets the gathered values widened to fp32 (norm weights and the
// embedding included, as FSDP's bf16 param_dtype does), while its GEMMs read the gathered 16-bit
// buffer itself (a WeightTwinSource, kernels/weight_twins.h, in the trainer's GEMM context): no
// rounding per GEMM.
#include <vector>

#include "comm/comm.h"
#include "core/dtype.h"
#include "core/memory.h"
#include "kernels/weight_twins.h"
#include "io/trace.h"
#include "model/param_access.h"
#include "parallel/zero/shard_layout.h"

namespace ff {

class GatherPool final : public ParamSource, public WeightTwinSource {
 public:
  GatherPool(const ShardLayout& shards, const float* param_shard, const Comm& comm, Tracer* tracer,
             int buffers = 3, DType gather_dtype = DType::f32);
  ~GatherPool() override;
  GatherPool(const GatherPool&) = delete;
  GatherPool& operator=(const GatherPool&) = delete;
  ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment& next) override;
  void release(const ParamSegment& seg) override;
  // Parameters changed (optimizer step): every gathered copy is stale.
  void invalidate();
  bool gathers_16bit() const { return gather_dtype_ != DType::f32; }
  int gathers() const { return gathers_; }          // collectives issued, for tests
  int prefetch_hits() const { return prefetch_hits_; }  // acquires served by a prefetch
  // The gathered 16-bit values of an acquired segment's [w, w + n) (16-bit gathers only).
  const void* find(const float* w, size_t n, DType t) const override;

 private:
  struct Slot {
    TrackedBuffer<float> data;
    TypedBuffer data16;        // 16-bit gathers: what arrived, widened into data once complete
    size_t offset = SIZE_MAX;  // segment held (SIZE_MAX: none)
    size_t count = 0;
    int users = 0;
    CommRequest pending;       // the gather filling it, if not yet waited
    bool has_pending = false;
    bool prefetched = false;  // filled ahead of its acquire, not yet acquired since
    uint64_t last_use = 0;
  };
  Slot* find(size_t offset);
  Slot* free_slot(size_t avoid_offset);
  void start_gather(Slot& slot, const ParamSegment& seg);
  void complete(Slot& slot);  // waits for the slot's gather (and widens a 16-bit one)

  const ShardLayout& shards_;
  const float* param_shard_;
  const Comm& comm_;
  Tracer* tracer_;
  std::vector<Slot> slots_;
  DType gather_dtype_;
  TypedBuffer shard16_;         // 16-bit gathers: the shard rounded once per step
  bool shard16_fresh_ = false;
  uint64_t clock_ = 0;
  int gathers_ = 0, prefetch_hits_ = 0;
};

}  // namespace ff
