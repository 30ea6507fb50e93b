#pragma once
// The 16-bit copy of the weights, made once per optimizer step. Without it every GEMM of a 16-bit
// run rounds its fp32 weight again (forward and dgrad: twice per micro-batch, and once more per
// pipeline or accumulation micro-batch). With it, the run rounds each fp32 master weight once
// after the parameters change, and gemm_run_precision (gemm_precision.h) reads the rounded copy
// whenever its weight operand lies inside a mirrored range. The rounding is the same function, so
// the products are bitwise those of rounding on every call.
//
// A trainer's copy is one of the twin sources of its GEMM context (gemm_context.h); it mirrors the
// fp32 ranges the model reads its weights from (the replicated parameter buffers). A range it
// does not cover (ZeRO-3's gathered buffers, a test's own arrays) is rounded per call as before.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"
#include "kernels/packed_weights.h"
#include "kernels/weight_twins.h"

namespace ff {

struct MirroredRange {
  const float* data = nullptr;
  size_t count = 0;
};

class WeightCopy final : public WeightTwinSource {
 public:
  // 2 bytes per element of `ranges` in the ledger's params category; the ranges must not overlap
  // another twin source's of the same context. `t` is bf16 or f16. Not yet valid: refresh().
  WeightCopy(std::vector<MirroredRange> ranges, DType t);
  WeightCopy(const WeightCopy&) = delete;
  WeightCopy& operator=(const WeightCopy&) = delete;

  // Rounds every range from its current fp32 values. Call after anything changes the weights
  // (optimizer step, load, averaging) and before the next forward; until then lookups miss.
  void refresh();
  // The weights changed: lookups miss (per-call rounding) until the next refresh.
  void invalidate() { valid_ = false; }
  size_t bytes() const { return buffer_.bytes(); }
  size_t refreshes() const { return refreshes_; }
  const PackedWeights& packed() const { return *packed_; }

  // The copy of [w, w + n) in `t`, or null when it is not inside one mirrored range of this dtype
  // or the copy is stale.
  const void* find(const float* w, size_t n, DType t) const override;
  // Packs each weight once per refresh: the packings are this copy's own (a new copy at the same
  // addresses starts with none), and each refresh is a new generation of them.
  bool multiply_packed(const void* w16, DType t, const PackedProduct& p) const override;

 private:
  std::vector<MirroredRange> ranges_;
  std::vector<size_t> starts_;  // element offset of each range in buffer_
  TypedBuffer buffer_;
  bool valid_ = false;
  size_t refreshes_ = 0;  // also the packings' generation: a refresh makes every packing stale
  std::unique_ptr<PackedWeights> packed_;  // filled by the products, released with the copy
};

// The copy is fresh for a scope (a training step's compute, an evaluation) and stale after it, so
// nothing that changes the weights outside those scopes (a load, a test's own writes) can be read
// through a stale copy. copy may be null (an fp32 run).
class FreshWeightCopy {
 public:
  explicit FreshWeightCopy(WeightCopy* copy) : copy_(copy) {
    if (copy_) copy_->refresh();
  }
  ~FreshWeightCopy() {
    if (copy_) copy_->invalidate();
  }
  FreshWeightCopy(const FreshWeightCopy&) = delete;
  FreshWeightCopy& operator=(const FreshWeightCopy&) = delete;

 private:
  WeightCopy* copy_;
};

}  // namespace ff
