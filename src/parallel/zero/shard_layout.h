#pragma once
// ZeRO sharding, FSDP-style: every segment of the flat layout (the embedding, each block, the
// head) is split into near-equal contiguous chunks, one per rank (the first count % ranks ranks
// own one element more: the same split as Comm's reduce-scatter and all-gather). A rank's shard is
// its chunk of every segment, back to back. Sharding per segment makes each gather and
// reduce-scatter one plain collective over the unit the model acquires, so ZeRO-3 gathers exactly
// what the next forward or backward needs, and no padding is needed.
#include <vector>

#include "comm/comm_types.h"
#include "parallel/param_group.h"
#include "parallel/optimizer.h"

namespace ff {

struct ShardedSegment {
  ParamSegment seg;     // where the segment lives in the flat layout
  ChunkRange mine;      // this rank's chunk (Comm's chunk_range), relative to seg.offset
  size_t shard_at = 0;  // where this rank's chunk starts in its shard
};

class ShardLayout {
 public:
  // Over a group's own coordinates: segments, chunks and shards are the group's.
  ShardLayout(const GroupLayout& layout, int ranks, int rank);
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  size_t shard_size() const { return shard_size_; }
  size_t max_segment() const { return max_segment_; }  // the largest gathered segment
  const std::vector<ShardedSegment>& segments() const { return segments_; }
  const ShardedSegment& of(const ParamSegment& seg) const;  // by offset; throws if unknown
  // Optimizer spans of this rank's shard. params_sharded: the parameter buffer is the shard
  // itself (ZeRO-3) rather than the full flat buffer (ZeRO-1/2).
  std::vector<OptimSpan> optimizer_spans(const GroupLayout& layout, bool params_sharded) const;

 private:
  int ranks_, rank_;
  std::vector<ShardedSegment> segments_;
  size_t shard_size_ = 0, max_segment_ = 0;
};

}  // namespace ff
