#pragma once
// How routed tokens reach the experts and come back: the MoE block's delegate for expert
// parallelism (parallel/expert/ implements it with all-to-all(v) over the ep group). The serial
// exchange below is the identity: this rank holds every expert.
//
// Rows leave sorted by global expert; the experts of ep rank r are [r * El, (r + 1) * El), so the
// rows for each destination rank are contiguous. They arrive grouped by this rank's local expert,
// and within an expert by source rank ascending.
//
// Dispatch and combine come in two halves so that the MoE block can compute what does not depend
// on the rows (the shared experts, the router's backward) while they travel: `*_begin` starts the
// exchange, `*_end` completes it, and between the two the buffers belong to the exchange. An
// exchange may finish all its work in `*_begin` (the identity below; expert parallelism without
// overlap); the block's results are the same either way.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ff {

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int ep() const { return 1; }
  // sent (E): rows this rank sends per global expert. Fills received (ep * El, source-major):
  // rows this rank's expert e gets from source s at [s * El + e].
  virtual void exchange_counts(const int32_t* sent, int32_t* received, int E) {
    std::memcpy(received, sent, size_t(E) * sizeof(int32_t));
  }
  // Rows of `width` floats, dispatched order -> grouped by local expert (counts: sent then received).
  virtual void dispatch_begin(const float* send, float* recv, int width, const int32_t* counts, int E) {
    std::memcpy(recv, send, rows_sent(counts, E) * size_t(width) * sizeof(float));
  }
  virtual void dispatch_end() {}
  // The reverse of dispatch.
  virtual void combine_begin(const float* recv, float* send, int width, const int32_t* counts, int E) {
    std::memcpy(send, recv, rows_sent(counts, E) * size_t(width) * sizeof(float));
  }
  virtual void combine_end() {}

 protected:
  static size_t rows_sent(const int32_t* counts, int E) {
    size_t n = 0;
    for (int e = 0; e < E; ++e) n += size_t(counts[e]);
    return n;
  }
};

}  // namespace ff
