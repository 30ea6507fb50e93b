#include "parallel/zero/gather_pool.h"

#include <functional>
#include <stdexcept>

#include "kernels/convert.h"

namespace ff {

GatherPool::GatherPool(const ShardLayout& shards, const float* param_shard, const Comm& comm,
                       Tracer* tracer, int buffers, DType gather_dtype)
    : shards_(shards), param_shard_(param_shard), comm_(comm), tracer_(tracer), slots_(size_t(buffers)),
      gather_dtype_(gather_dtype) {
  for (Slot& s : slots_) {
    s.data.allocate(shards.max_segment(), MemCategory::workspace);
    if (gather_dtype_ != DType::f32)
      s.data16.allocate(shards.max_segment(), gather_dtype_, MemCategory::workspace);
  }
  if (gather_dtype_ != DType::f32) shard16_.allocate(shards.shard_size(), gather_dtype_, MemCategory::params);
}

GatherPool::~GatherPool() {
  for (Slot& s : slots_)
    if (s.has_pending) s.pending.wait();
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
  slot.count = seg.count;
  if (gather_dtype_ == DType::f32) {
    slot.pending = comm_.all_gather_async(param_shard_ + s.shard_at, slot.data.data(), seg.count);
  } else {
    // Once per step (the first gather after an update): the whole shard, so every segment's
    // gather sends values rounded from the same fp32 weights.
    if (!shard16_fresh_) convert_from_f32(shard16_.ptr(), param_shard_, shards_.shard_size());
    shard16_fresh_ = true;
    slot.pending = comm_.all_gather_async(shard16_.ptr().at(s.shard_at), slot.data16.ptr(), seg.count);
  }
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
  if (slot->has_pending) complete(*slot);
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

void GatherPool::complete(Slot& slot) {
  {
    TraceScope wait(tracer_, "wait gather", "compute");
    slot.pending.wait();
  }
  slot.has_pending = false;
  if (gather_dtype_ != DType::f32) convert_to_f32(slot.data.data(), slot.data16.ptr(), slot.count);
}

const void* GatherPool::find(const float* w, size_t n, DType t) const {
  if (t != gather_dtype_) return nullptr;
  const std::less<const float*> lt;
  for (const Slot& s : slots_) {
    if (s.offset == SIZE_MAX || s.has_pending) continue;
    const float* base = s.data.data();
    if (!lt(w, base) && !lt(base + s.count, w + n)) return s.data16.ptr().at(size_t(w - base)).data();
  }
  return nullptr;
}

void GatherPool::release(const ParamSegment& seg) {
  Slot* slot = find(seg.offset);
  if (!slot || slot->users == 0) throw std::logic_error("release of a segment that was not acquired");
  --slot->users;
}

void GatherPool::invalidate() {
  shard16_fresh_ = false;
  for (Slot& s : slots_) {
    if (s.has_pending) s.pending.wait();
    s.has_pending = false;
    s.prefetched = false;
    s.offset = SIZE_MAX;
    s.users = 0;
  }
}

}  // namespace ff
