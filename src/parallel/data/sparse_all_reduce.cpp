#include "parallel/data/sparse_all_reduce.h"

#include <algorithm>
#include <cstring>

namespace ff {

namespace {

bool all_bits_zero(const float* x, size_t n) {
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    any |= bits;
  }
  return any == 0;
}

}  // namespace

void SparseAllReduce::begin(float* x, size_t n, const Comm& comm) {
  x_ = x, n_ = n, comm_ = &comm, p_ = comm.size();
  const size_t chunks = (n + kChunk - 1) / kChunk;
  written_.assign(chunks, 0);
  for (size_t c = 0; c < chunks; ++c)
    written_[c] = all_bits_zero(x + c * kChunk, std::min(kChunk, n - c * kChunk)) ? 0 : 1;
  flags_ = comm.all_reduce_async(written_.data(), chunks, ReduceOp::max);
}

bool SparseAllReduce::reduce() {
  flags_.wait();
  const size_t chunks = written_.size();
  size_t packed = 0;
  for (size_t c = 0; c < chunks; ++c)
    if (written_[c]) packed += std::min(kChunk, n_ - c * kChunk);
  // Gathering sends (p - 1) x packed and receives as much; the dense all-reduce 2 (p - 1) / p x n.
  // Ask for half of that, so the extra latency of the flags is worth it.
  if (p_ < 2 || packed * size_t(p_) >= n_) {
    x_ = nullptr;
    return false;
  }
  packed_ = packed;
  mine_.resize(packed);
  all_.resize(packed * size_t(p_));
  float* out = mine_.data();
  for (size_t c = 0; c < chunks; ++c)
    if (written_[c]) {
      const size_t len = std::min(kChunk, n_ - c * kChunk);
      std::memcpy(out, x_ + c * kChunk, len * sizeof(float));
      out += len;
    }
  pending_ = comm_->all_gather_async(mine_.data(), all_.data(), packed * size_t(p_));
  return true;
}

void SparseAllReduce::finish() {
  if (!x_) return;
  pending_.wait();
  // Walk the written chunks in order; `at` is the element's place in each rank's packed part.
  // The dense all-reduce's owner of element e is the rank whose chunk_range(n, p, .) holds it.
  size_t at = 0;
  int owner = 0;
  ChunkRange own = chunk_range(n_, p_, 0);
  for (size_t c = 0; c < written_.size(); ++c) {
    if (!written_[c]) continue;
    const size_t lo = c * kChunk, hi = std::min(n_, lo + kChunk);
    for (size_t e = lo; e < hi; ++e, ++at) {
      while (e >= own.offset + own.count) own = chunk_range(n_, p_, ++owner);
      float sum = all_[size_t(owner) * packed_ + at];
      for (int k = 1; k < p_; ++k) sum = sum + all_[size_t((owner - k + p_) % p_) * packed_ + at];
      x_[e] = sum;
    }
  }
  x_ = nullptr;
}

}  // namespace ff
