#pragma once
// The sum over a group of a gradient that is zero in most places on every rank, as Comm's
// all_reduce computes it, bit for bit, moving only the parts some rank wrote. The embedding's
// gradient is the case: a step touches the rows of the tokens it saw (about a quarter of a 4096-word
// vocabulary for `small`), and it is the last bucket of backward, so nothing hides its transfer.
//
// The buffer is cut into chunks of kChunk elements. A chunk whose every element is +0.0 on every
// rank sums to +0.0 in the dense all-reduce too, so it is left in place. The others are packed and
// all-gathered, and each rank adds the p contributions of every element in the order the dense
// pairwise all-reduce uses on the element's owner (collectives.cpp: chunk_range(n, p, c) owns it,
// sum = ((x_c + x_{c-1}) + x_{c-2}) + ..., ranks mod p): the same additions in the same order.
// -0.0 counts as written (its bits are not zero), so no sign of zero changes either.
#include <cstdint>
#include <vector>

#include "comm/comm.h"

namespace ff {

class SparseAllReduce {
 public:
  static constexpr size_t kChunk = 256;
  // Notes which chunks of x[0, n) this rank wrote and starts finding which any rank wrote (a small
  // all-reduce). x stays the caller's until finish(), or until reduce() returns false.
  void begin(float* x, size_t n, const Comm& comm);
  // Waits for the flags. When the written part is small enough that gathering it moves fewer
  // bytes than the dense all-reduce would (p x written < n), starts gathering it and returns
  // true; otherwise returns false, x untouched: the caller all-reduces it densely. Every rank
  // decides the same.
  bool reduce();
  // Waits for the gather and writes every written element's sum into x.
  void finish();
  bool begun() const { return x_ != nullptr; }
  double started_us() const { return pending_.started_us(); }
  double completed_us() const { return pending_.completed_us(); }

 private:
  float* x_ = nullptr;
  const Comm* comm_ = nullptr;
  size_t n_ = 0, packed_ = 0;
  int p_ = 1;
  std::vector<uint8_t> written_;  // per chunk: this rank wrote it; after the flags, some rank did
  // Scratch reused every step, at most 3x the buffer; not in the memory ledger (the estimate
  // counts DDP's gradients only).
  std::vector<float> mine_, all_;
  CommRequest flags_, pending_;
};

}  // namespace ff
