#include "parallel/expert/all_to_all_experts.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace ff {

namespace {

// The clock of Tracer and of CommRequest's timestamps.
double monotonic_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

AllToAllExperts::AllToAllExperts(const Comm& ep, size_t max_rows, int width, bool overlap, Tracer* tracer)
    : ep_(&ep), overlap_(overlap), tracer_(tracer) {
  staging_.allocate(max_rows * size_t(ep.size()) * size_t(width), MemCategory::workspace);
}

void AllToAllExperts::exchange_counts(const int32_t* sent, int32_t* received, int E) {
  ep_->all_to_all(sent, received, size_t(E / ep_->size()));
}

AllToAllExperts::Plan AllToAllExperts::plan(const int32_t* counts, int E, int width) const {
  const int P = ep_->size(), El = E / P;
  const int32_t* sent = counts;
  const int32_t* received = counts + E;
  Plan p;
  p.send.assign(size_t(P), 0), p.recv.assign(size_t(P), 0);
  p.staged_at.resize(size_t(E)), p.grouped_at.resize(size_t(E)), p.block.resize(size_t(E));
  for (int r = 0; r < P; ++r)
    for (int e = 0; e < El; ++e) {
      p.send[size_t(r)] += size_t(sent[r * El + e]) * size_t(width);
      p.recv[size_t(r)] += size_t(received[r * El + e]) * size_t(width);
    }
  size_t at = 0;  // source-major, as all_to_allv delivers
  for (int s = 0; s < P; ++s)
    for (int e = 0; e < El; ++e) {
      const size_t i = size_t(s * El + e);
      p.block[i] = size_t(received[i]) * size_t(width);
      p.staged_at[i] = at, at += p.block[i];
    }
  at = 0;  // expert-major: each local expert's rows contiguous for its GEMMs
  for (int e = 0; e < El; ++e)
    for (int s = 0; s < P; ++s) {
      const size_t i = size_t(s * El + e);
      p.grouped_at[i] = at, at += p.block[i];
    }
  if (at > staging_.size()) throw std::logic_error("AllToAllExperts: more rows than the buffers were sized for");
  return p;
}

void AllToAllExperts::finish(const char* what) {
  const double t0 = monotonic_us();
  pending_.wait();
  const double t1 = monotonic_us();
  timing_.wait_us += t1 - t0;
  if (pending_.completed_us() > 0) {  // an exchange with no rows at all never started
    timing_.comm_us += pending_.completed_us() - pending_.started_us();
    if (tracer_) {
      tracer_->span(std::string(what) + " (wait)", "ep wait", t0, t1);
      tracer_->span(what, "ep comm", pending_.started_us(), pending_.completed_us());
    }
  }
  ++timing_.exchanges;
  pending_ = CommRequest();
}

void AllToAllExperts::dispatch_begin(const float* send, float* recv, int width, const int32_t* counts, int E) {
  if (dispatch_to_ || combining_) throw std::logic_error("AllToAllExperts: an exchange is already in flight");
  dispatching_ = plan(counts, E, width);
  dispatch_to_ = recv;
  pending_ = ep_->all_to_allv_async(send, dispatching_.send, staging_.data(), dispatching_.recv);
  if (!overlap_) dispatch_end();
}

void AllToAllExperts::dispatch_end() {
  if (!dispatch_to_) return;  // finished in dispatch_begin
  finish("dispatch");
  const Plan& p = dispatching_;
  const float* staged = staging_.data();
  for (size_t i = 0; i < p.block.size(); ++i)
    std::memcpy(dispatch_to_ + p.grouped_at[i], staged + p.staged_at[i], p.block[i] * sizeof(float));
  dispatch_to_ = nullptr;
}

void AllToAllExperts::combine_begin(const float* recv, float* send, int width, const int32_t* counts, int E) {
  if (dispatch_to_ || combining_) throw std::logic_error("AllToAllExperts: an exchange is already in flight");
  const Plan p = plan(counts, E, width);
  float* staged = staging_.data();
  for (size_t i = 0; i < p.block.size(); ++i)
    std::memcpy(staged + p.staged_at[i], recv + p.grouped_at[i], p.block[i] * sizeof(float));
  pending_ = ep_->all_to_allv_async(staged, p.recv, send, p.send);
  combining_ = true;
  if (!overlap_) combine_end();
}

void AllToAllExperts::combine_end() {
  if (!combining_) return;  // finished in combine_begin
  finish("combine");
  combining_ = false;
}

}  // namespace ff
