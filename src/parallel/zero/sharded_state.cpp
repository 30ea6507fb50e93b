#include "parallel/zero/sharded_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/adamw.h"
#include "model/linear.h"
#include "parallel/grad_wire.h"

namespace ff {

// Stage 1's sink: backward accumulates into the full gradient; on the step's last micro-batch
// each released segment is reduce-scattered straight into the gradient shard.
class ShardedState::Stage1Sink final : public GradSink {
 public:
  // wire bf16: the full gradient goes out through a bf16 copy (2Ψ, accounted as gradients: with
  // the fp32 buffer, FORMULAS.md's 20Ψ split) and the chunk returns into a bf16 shard.
  Stage1Sink(const ShardLayout& shards, size_t total, float* full, float* shard, const Comm& comm, DType wire)
      : shards_(shards), full_(full), shard_(shard), comm_(comm),
        wire_in_(wire, total, MemCategory::grads),
        wire_out_(wire, shards.shard_size(), MemCategory::workspace) {}
  void set_sync(bool sync) { sync_ = sync; }
  TypedPtr acquire(const ParamSegment& seg) override { return full_ + seg.offset; }
  void release(const ParamSegment& seg) override {
    if (!sync_) return;
    const ShardedSegment& s = shards_.of(seg);
    if (!wire_in_.active()) {
      inflight_.push_back(comm_.reduce_scatter_async(full_ + seg.offset, shard_ + s.shard_at, seg.count));
      return;
    }
    wire_in_.round_in(full_ + seg.offset, seg.offset, seg.count);
    inflight_.push_back(comm_.reduce_scatter_async(wire_in_.at(seg.offset), wire_out_.at(s.shard_at), seg.count));
    released_.push_back(&s);
  }
  void finish() {
    for (auto& r : inflight_) r.wait();
    for (const ShardedSegment* s : released_) wire_out_.widen_out(shard_ + s->shard_at, s->shard_at, s->mine.count);
    inflight_.clear();
    released_.clear();
  }

 private:
  const ShardLayout& shards_;
  float* full_;
  float* shard_;
  const Comm& comm_;
  bool sync_ = false;
  std::vector<CommRequest> inflight_;
  GradWire wire_in_, wire_out_;
  std::vector<const ShardedSegment*> released_;  // this step's, when the wire is bf16
};

ShardedState::ShardedState(const GroupLayout& layout, const AdamWConfig& adam, int stage,
                           const Comm& dp, Tracer* tracer, DType gather_dtype, DType wire)
    : layout_(layout),
      stage_(stage),
      comm_(dp),
      shards_(layout, dp.size(), dp.rank()),
      params_(stage == 3 ? shards_.shard_size() : layout.total(), MemCategory::params),
      // Stage 1 already holds the full gradient (the formula's 4Ψ); its shard is only the
      // reduce-scatter's output, so it is counted as communication workspace.
      grad_shard_(shards_.shard_size(), stage == 1 ? MemCategory::workspace : MemCategory::grads),
      adam_(shards_.optimizer_spans(layout, stage == 3), shards_.shard_size(), adam),
      flat_source_(params_.data()) {
  if (stage == 1) {
    full_grads_.allocate(layout.total(), MemCategory::grads);
    stage1_sink_ = std::make_unique<Stage1Sink>(shards_, layout.total(), full_grads_.data(), grad_shard_.data(), dp, wire);
  } else {
    rs_sink_ = std::make_unique<ReduceScatterGrads>(shards_, grad_shard_.data(), dp, tracer, wire);
  }
  if (stage == 3) gather_ = std::make_unique<GatherPool>(shards_, params_.data(), dp, tracer, 3, gather_dtype);
}

ShardedState::~ShardedState() = default;

ParamSource& ShardedState::params() {
  if (gather_) return *gather_;
  return flat_source_;
}

GradSink& ShardedState::grads(bool sync) {
  if (stage1_sink_) {
    stage1_sink_->set_sync(sync);
    return *stage1_sink_;
  }
  return *rs_sink_;
}

void ShardedState::zero_grads() {
  zero_rows(grad_shard_.data(), grad_shard_.size());  // on every thread (model/linear.h)
  if (full_grads_.data()) zero_rows(full_grads_.data(), full_grads_.size());
}

void ShardedState::finish_grads() {
  if (stage1_sink_) stage1_sink_->finish();
  if (rs_sink_) rs_sink_->finish();
}

double ShardedState::grad_square_sum(const std::vector<WeightedRange>& weights) {
  const double local = l2_norm(grad_shard_.data(), grad_shard_.size());
  double sq = local * local;
  // The weighted ranges, cut down to the chunks this rank owns.
  for (const WeightedRange& w : weights)
    for (const ShardedSegment& s : shards_.segments()) {
      const size_t mine = s.seg.offset + s.mine.offset;
      const size_t lo = std::max(w.offset, mine), hi = std::min(w.offset + w.count, mine + s.mine.count);
      if (lo >= hi) continue;
      const double part = l2_norm(grad_shard_.data() + s.shard_at + (lo - mine), hi - lo);
      sq += (w.weight - 1) * part * part;
    }
  comm_.all_reduce(&sq, 1);
  return sq;
}

void ShardedState::scale_grads(float s) { scale_inplace(grad_shard_.data(), grad_shard_.size(), s); }

void ShardedState::gather_segments(const float* shard, float* full) {
  std::vector<CommRequest> reqs;
  for (const ShardedSegment& s : shards_.segments())
    reqs.push_back(comm_.all_gather_async(shard + s.shard_at, full + s.seg.offset, s.seg.count));
  for (auto& r : reqs) r.wait();
}

void ShardedState::optimizer_step(float lr, int step) {
  adam_.step(params_.data(), grad_shard_.data(), lr, step);
  if (stage_ == 3) {
    gather_->invalidate();
    return;
  }
  // Stages 1 and 2: each rank updated its chunks in place in the full buffer; gather everyone's.
  std::vector<float> mine(shards_.shard_size());
  for (const ShardedSegment& s : shards_.segments())
    std::memcpy(mine.data() + s.shard_at, params_.data() + s.seg.offset + s.mine.offset,
                s.mine.count * sizeof(float));
  gather_segments(mine.data(), params_.data());
}

void ShardedState::init_parameters(const ModelConfig& c, uint64_t seed) {
  if (stage_ != 3) {
    layout_.init_parameters(params_.data(), c, seed);
    return;
  }
  // Each rank draws exactly its own elements (principle 8, docs/principles.md).
  for (const ShardedSegment& s : shards_.segments())
    layout_.init_range(params_.data() + s.shard_at, s.seg.offset + s.mine.offset, s.mine.count, c, seed);
}

void ShardedState::gather_full(float* params, float* m, float* v) {
  if (stage_ == 3) gather_segments(params_.data(), params);
  else std::memcpy(params, params_.data(), params_.bytes());
  gather_segments(adam_.m(), m);
  gather_segments(adam_.v(), v);
}

std::vector<const WeightTwinSource*> ShardedState::weight_twins() const {
  if (!gather_ || !gather_->gathers_16bit()) return {};
  return {gather_.get()};
}

StateRuns ShardedState::checkpoint_runs(bool for_save) {
  StateRuns r;
  // Stages 1 and 2 hold the full parameters; each rank saves only its own chunks of them.
  if (stage_ != 3 && !for_save) r.params.push_back({0, params_.size(), params_.data()});
  for (const ShardedSegment& s : shards_.segments()) {
    if (s.mine.count == 0) continue;
    const size_t at = s.seg.offset + s.mine.offset;
    if (stage_ == 3) r.params.push_back({at, s.mine.count, params_.data() + s.shard_at});
    else if (for_save) r.params.push_back({at, s.mine.count, params_.data() + at});
    r.m.push_back({at, s.mine.count, adam_.m() + s.shard_at});
    r.v.push_back({at, s.mine.count, adam_.v() + s.shard_at});
  }
  return r;
}

void ShardedState::after_load() {
  if (gather_) gather_->invalidate();
}

}  // namespace ff
