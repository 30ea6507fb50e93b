#include "parallel/data/replicated_state.h"

#include <cstring>

#include "kernels/adamw.h"
#include "model/linear.h"

namespace ff {

ReplicatedState::ReplicatedState(const GroupLayout& layout, const AdamWConfig& adam,
                                 const DataParallelConfig& cfg, const Comm* dp, Tracer* tracer)
    : layout_(layout),
      params_(layout.total(), MemCategory::params),
      grads_(layout.total(), MemCategory::grads),
      adam_(full_group_spans(layout), layout.total(), adam),
      source_(params_.data()),
      local_sink_(grads_.data()),
      comm_rank_(dp ? dp->rank() : 0) {
  if (dp && dp->size() > 1 && cfg.sync != GradSync::none) {
    const size_t bucket_elems = size_t(cfg.bucket_mb * 1024 * 1024 / sizeof(float));
    ddp_ = std::make_unique<BucketedAllReduce>(layout, grads_.data(), *dp, bucket_elems,
                                               cfg.sync == GradSync::overlap, tracer, cfg.grad_reduce);
  }
}

GradSink& ReplicatedState::grads(bool sync) {
  if (!ddp_) return local_sink_;
  ddp_->set_sync(sync);
  return *ddp_;
}

// On every thread (model/linear.h): one thread alone zeroing the whole gradient is a serial pass
// over the largest buffer of the step while the others wait.
void ReplicatedState::zero_grads() { zero_rows(grads_.data(), grads_.size()); }

void ReplicatedState::finish_grads() {
  if (ddp_) ddp_->finish();
}

double ReplicatedState::grad_square_sum(const std::vector<WeightedRange>& weights) {
  const double all = l2_norm(grads_.data(), grads_.size());
  double sq = all * all;
  for (const WeightedRange& w : weights) {
    const double part = l2_norm(grads_.data() + w.offset, w.count);
    sq += (w.weight - 1) * part * part;
  }
  return sq;  // every data-parallel rank holds the same summed gradient
}

void ReplicatedState::scale_grads(float s) { scale_inplace(grads_.data(), grads_.size(), s); }

void ReplicatedState::optimizer_step(float lr, int step) {
  // Every rank holds the same summed gradient, so every replica takes the same step.
  adam_.step(params_.data(), grads_.data(), lr, step);
}

void ReplicatedState::init_parameters(const ModelConfig& c, uint64_t seed) {
  layout_.init_parameters(params_.data(), c, seed);
}

void ReplicatedState::gather_full(float* params, float* m, float* v) {
  const size_t bytes = params_.bytes();
  if (params) std::memcpy(params, params_.data(), bytes);
  if (m) std::memcpy(m, adam_.m(), bytes);
  if (v) std::memcpy(v, adam_.v(), bytes);
}

StateRuns ReplicatedState::checkpoint_runs(bool for_save) {
  if (for_save && comm_rank_ != 0) return {};  // every replica holds the same state
  const size_t n = params_.size();
  return {{{0, n, params_.data()}}, {{0, n, adam_.m()}}, {{0, n, adam_.v()}}};
}

}  // namespace ff
