#include "parallel/zero/shard_layout.h"

#include <algorithm>
#include <stdexcept>

namespace ff {

ShardLayout::ShardLayout(const GroupLayout& layout, int ranks, int rank) : ranks_(ranks), rank_(rank) {
  for (const ParamSegment& seg : layout.segments()) {
    ShardedSegment s{seg, chunk_range(seg.count, ranks, rank), shard_size_};
    shard_size_ += s.mine.count;
    max_segment_ = std::max(max_segment_, seg.count);
    segments_.push_back(s);
  }
}

const ShardedSegment& ShardLayout::of(const ParamSegment& seg) const {
  for (const auto& s : segments_)
    if (s.seg.offset == seg.offset) return s;
  throw std::logic_error("no sharded segment at offset " + std::to_string(seg.offset));
}

std::vector<OptimSpan> ShardLayout::optimizer_spans(const GroupLayout& layout,
                                                    bool params_sharded) const {
  std::vector<OptimSpan> spans;
  for (const ShardedSegment& s : segments_) {
    const size_t lo = s.seg.offset + s.mine.offset, hi = lo + s.mine.count;
    // Each tensor overlapping this rank's chunk contributes its overlap.
    for (const ParamTensorSpan& t : layout.tensors()) {
      const size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.count);
      if (a >= b) continue;
      const size_t state_at = s.shard_at + (a - lo);
      spans.push_back({params_sharded ? state_at : a, state_at, b - a, t.decay});
    }
  }
  return spans;
}

}  // namespace ff
