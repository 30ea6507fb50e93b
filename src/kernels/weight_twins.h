#pragma once
// A source of 16-bit twins of fp32 weights: a buffer, rounded once, that holds the same 16-bit
// values a GEMM would round its fp32 weight operand to. The run's weight copy (weight_copy.h) and
// ZeRO-3's gather buffers (parallel/zero/gather_pool.h) are sources; the GEMMs that may read them
// are told so by their context (gemm_context.h), never by a process-wide list.
#include <cstddef>

#include "core/dtype.h"
#include "kernels/packed_weights.h"

namespace ff {

class WeightTwinSource {
 public:
  virtual ~WeightTwinSource() = default;
  // The twin of [w, w + n) in dtype t, or null when this source has none (or a stale one).
  virtual const void* find(const float* w, size_t n, DType t) const = 0;
  // Runs p with a packed copy of its twin w16 (packed_weights.h), when this source keeps its twins
  // for long enough (a step) to make packing pay; false: the caller multiplies plainly.
  virtual bool multiply_packed(const void* w16, DType t, const PackedProduct& p) const {
    (void)w16, (void)t, (void)p;
    return false;
  }
};

}  // namespace ff
