#include "parallel/zero/gather_pool.h"

#include <stdexcept>

namespace ff {

GatherPool::GatherPool(const ShardLayout& shards, const float* param_shard, const Comm& comm,
                       Tracer* tracer, int buffers)
    : shards_(shards), param_shard_(param_shard), comm_(comm), tracer_(tracer), slots_(size_t(buffers)) {
  for (Slot& s : slots_) s.data.allocate(shards.max_segment(), MemCategory::workspace);
}

GatherPool::Slot* GatherPool::find(size_t offset) {
  for (Slot& s : slots_)
    if (s.offset == offset) return &s;
  return nullptr;
}

GatherPool::Slot* GatherPool::free_slot(size_t avoid_offset) {
  Slot* best = nullptr;
  for (Slot& s : slots_) {
    const bool empty = s.offset == SIZE_MAX;
    if (s.users > 0 || (!empty && s.offset == avoid_offset)) continue;
    if (!best || s.last_use < best->last_use) best = &s;
  }
  return best;
}

void GatherPool::start_gather(Slot& slot, const ParamSegment& seg) {
  if (slot.has_pending) slot.pending.wait();
  const ShardedSegment& s = shards_.of(seg);
  slot.offset = seg.offset;
  slot.pending = comm_.all_gather_async(param_shard_ + s.shard_at, slot.data.data(), seg.count);
  slot.has_pending = true;
  slot.prefetched = false;
  slot.last_use = ++clock_;  // a fresh prefetch is the last thing to evict
  ++gathers_;
}

ConstTypedPtr GatherPool::acquire(const ParamSegment& seg, const ParamSegment& next) {
  Slot* slot = find(seg.offset);
  if (slot && slot->prefetched) ++prefetch_hits_, slot->prefetched = false;
  if (!slot) {
    slot = free_slot(SIZE_MAX);
    if (!slot) throw std::logic_error("ZeRO-3 gather pool exhausted: more segments held than buffers");
    start_gather(*slot, seg);
  }
  if (slot->has_pending) {
    TraceScope wait(tracer_, "wait gather", "compute");
    slot->pending.wait();
    slot->has_pending = false;
  }
  ++slot->users;
  slot->last_use = ++clock_;
  // Prefetch: the next segment's gather runs while this one is computed on.
  if (next.count > 0 && !find(next.offset))
    if (Slot* spare = free_slot(seg.offset)) {
      start_gather(*spare, next);
      spare->prefetched = true;
    }
  return slot->data.data();
}

void GatherPool::release(const ParamSegment& seg) {
  Slot* slot = find(seg.offset);
  if (!slot || slot->users == 0) throw std::logic_error("release of a segment that was not acquired");
  --slot->users;
}

void GatherPool::invalidate() {
  for (Slot& s : slots_) {
    if (s.has_pending) s.pending.wait();
    s.has_pending = false;
    s.prefetched = false;
    s.offset = SIZE_MAX;
    s.users = 0;
  }
}

}  // namespace ff
