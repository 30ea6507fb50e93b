#include "parallel/data/async_dp.h"

#include <cstring>

namespace ff {

AsyncState::AsyncState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
                       const DataParallelConfig& cfg, Tracer* tracer)
    : LocalReplicaState(spec, model, adam, cfg, tracer, /*local_mean=*/false) {
  for (int i = 0; i <= staleness(); ++i) slots_.emplace_back(size(), MemCategory::grads);
  inflight_.resize(slots_.size());
}

AsyncState::~AsyncState() {
  for (CommRequest& r : inflight_) r.wait();  // the buffers die with this object
}

void AsyncState::finish_grads() {
  LocalReplicaState::finish_grads();
  // The trainer scaled each contribution by 1/(global batch), so the sum over dp is the mean.
  const size_t n = size(), ring = slots_.size();
  const size_t now = size_t(produced_++) % ring;
  inflight_[now].wait();  // the slot's previous gradient was consumed s steps ago; no-op
  std::memcpy(slots_[now].data(), grad_data(), n * sizeof(float));
  inflight_[now] = dp().all_reduce_async(slots_[now].data(), n);
  have_ = produced_ > staleness();
  if (!have_) {
    std::memset(grad_data(), 0, n * sizeof(float));
    return;
  }
  // Slot of step t − s: with s + 1 slots, the one after `now` in the ring.
  const size_t old = (now + 1) % ring;
  inflight_[old].wait();
  std::memcpy(grad_data(), slots_[old].data(), n * sizeof(float));
}

void AsyncState::optimizer_step(float lr, int step) {
  if (!have_) return;
  inner().optimizer_step(lr, step - staleness());
}

}  // namespace ff
