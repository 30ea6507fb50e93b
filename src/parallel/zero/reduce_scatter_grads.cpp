#include "parallel/zero/reduce_scatter_grads.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ff {

ReduceScatterGrads::ReduceScatterGrads(const ShardLayout& shards, float* grad_shard,
                                       const Comm& comm, Tracer* tracer, DType wire)
    : shards_(shards), grad_shard_(grad_shard), comm_(comm), tracer_(tracer) {
  size_t max_chunk = 0;
  for (const auto& s : shards.segments()) max_chunk = std::max(max_chunk, s.mine.count);
  for (Stage& st : stages_) {
    st.full.allocate(shards.max_segment(), MemCategory::workspace);
    st.mine.allocate(std::max<size_t>(max_chunk, 1), MemCategory::workspace);
    st.wire_full = GradWire(wire, shards.max_segment(), MemCategory::workspace);
    st.wire_mine = GradWire(wire, max_chunk, MemCategory::workspace);
  }
}

void ReduceScatterGrads::complete(Stage& st) {
  if (!st.has_pending) return;
  {
    TraceScope wait(tracer_, "wait reduce-scatter", "compute");
    st.pending.wait();
  }
  st.has_pending = false;
  if (st.wire_mine.active()) st.wire_mine.widen_out(st.mine.data(), 0, st.seg->mine.count);
  // Gradient accumulation: every micro-batch's summed chunk adds into the shard.
  float* dst = grad_shard_ + st.seg->shard_at;
  const float* src = st.mine.data();
  for (size_t i = 0; i < st.seg->mine.count; ++i) dst[i] += src[i];
}

TypedPtr ReduceScatterGrads::acquire(const ParamSegment& seg) {
  // Take the stage not in use; a tied embedding may already hold the other one.
  Stage* st = &stages_[next_];
  if (std::find(held_.begin(), held_.end(), st) != held_.end()) st = &stages_[next_ ^= 1];
  if (std::find(held_.begin(), held_.end(), st) != held_.end())
    throw std::logic_error("ZeRO gradient staging exhausted: more than two segments held");
  next_ ^= 1;
  complete(*st);
  st->seg = &shards_.of(seg);
  std::memset(st->full.data(), 0, seg.count * sizeof(float));
  held_.push_back(st);
  return st->full.data();
}

void ReduceScatterGrads::release(const ParamSegment& seg) {
  auto it = std::find_if(held_.begin(), held_.end(), [&](Stage* s) { return s->seg->seg.offset == seg.offset; });
  if (it == held_.end()) throw std::logic_error("release of a gradient segment that was not acquired");
  Stage* st = *it;
  held_.erase(it);
  if (st->wire_full.active()) {
    st->wire_full.round_in(st->full.data(), 0, seg.count);
    st->pending = comm_.reduce_scatter_async(st->wire_full.at(0), st->wire_mine.at(0), seg.count);
  } else {
    st->pending = comm_.reduce_scatter_async(st->full.data(), st->mine.data(), seg.count);
  }
  st->has_pending = true;
}

void ReduceScatterGrads::finish() {
  for (Stage& st : stages_) complete(st);
}

}  // namespace ff
