#pragma once
// How the model reaches its parameters and gradients: one segment (a contiguous range of the flat
// layout: the embedding, one block, or the head) at a time, bracketed by acquire/release. The
// serial model uses the flat buffers directly; data-parallel and ZeRO wrappers implement these to
// gather sharded parameters just in time and to start gradient communication the moment a
// segment's gradients are final, without the model knowing any of it (principle 6,
// docs/principles.md).
#include <cstddef>

#include "core/dtype.h"

namespace ff {

struct ParamSegment {
  size_t offset = 0;  // first element in the flat layout
  size_t count = 0;
  size_t end() const { return offset + count; }
};

// Which parameter group a segment belongs to (principle 13, docs/principles.md): dense parameters
// reduce and shard over dp x cp, expert parameters over the expert-data-parallel group.
enum class ParamGroupKind { dense, expert };

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // Full values of the segment, valid until the matching release, in the group's working dtype.
  // `next` is the segment the model will ask for after this one (count 0 at the end), so a
  // sharded source can prefetch it.
  virtual ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment& next) = 0;
  virtual void release(const ParamSegment& seg) {}
};

class GradSink {
 public:
  virtual ~GradSink() = default;
  // Where the segment's gradients accumulate (+=) during this backward, in the dtype the sink
  // accumulates in.
  virtual TypedPtr acquire(const ParamSegment& seg) = 0;
  // The segment's gradients for this backward are complete.
  virtual void release(const ParamSegment& seg) {}
};

// The serial case: one full buffer each.
class FlatParams final : public ParamSource {
 public:
  explicit FlatParams(const float* base) : base_(base) {}
  ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment&) override {
    return base_ + seg.offset;
  }

 private:
  const float* base_;
};

class FlatGrads final : public GradSink {
 public:
  explicit FlatGrads(float* base) : base_(base) {}
  TypedPtr acquire(const ParamSegment& seg) override { return base_ + seg.offset; }

 private:
  float* base_;
};

}  // namespace ff
