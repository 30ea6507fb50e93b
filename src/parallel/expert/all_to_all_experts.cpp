#include "parallel/expert/all_to_all_experts.h"

#include <cstring>
#include <stdexcept>

namespace ff {

AllToAllExperts::AllToAllExperts(const Comm& ep, size_t max_rows, int width) : ep_(&ep) {
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

void AllToAllExperts::dispatch(const float* send, float* recv, int width, const int32_t* counts, int E) {
  const Plan p = plan(counts, E, width);
  float* staged = staging_.data();
  ep_->all_to_allv(send, p.send, staged, p.recv);
  for (size_t i = 0; i < p.block.size(); ++i)
    std::memcpy(recv + p.grouped_at[i], staged + p.staged_at[i], p.block[i] * sizeof(float));
}

void AllToAllExperts::combine(const float* recv, float* send, int width, const int32_t* counts, int E) {
  const Plan p = plan(counts, E, width);
  float* staged = staging_.data();
  for (size_t i = 0; i < p.block.size(); ++i)
    std::memcpy(staged + p.staged_at[i], recv + p.grouped_at[i], p.block[i] * sizeof(float));
  ep_->all_to_allv(staged, p.recv, send, p.send);
}

}  // namespace ff
