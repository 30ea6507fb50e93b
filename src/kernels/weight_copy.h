#pragma once
// The 16-bit copy of the weights, made once per optimizer step. Without it every GEMM of a 16-bit
// run rounds its fp32 weight again (forward and dgrad: twice per micro-batch, and once more per
// pipeline or accumulation micro-batch). With it, the run rounds each fp32 master weight once
// after the parameters change, and gemm_run_precision (gemm_precision.h) reads the rounded copy
// whenever its weight operand lies inside a mirrored range. The rounding is the same function, so
// the products are bitwise those of rounding on every call.
//
// Each trainer's copy is registered while it lives (a test may hold two trainers); it mirrors the
// fp32 ranges the model reads its weights from (the replicated parameter buffers). A range it
// does not cover (ZeRO-3's gathered buffers, a test's own arrays) is rounded per call as before.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"
#include "kernels/packed_weights.h"

namespace ff {

// Anything holding 16-bit twins of fp32 weights the model reads: the run's WeightCopy, ZeRO-3's
// gather buffers (parallel/zero/gather_pool.h). Registered, a source is asked by every 16-bit
// forward and dgrad GEMM for its weight operand (find_weight_copy below).
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
// At most 16 sources at once; registered sources must cover disjoint fp32 ranges.
void register_weight_twins(const WeightTwinSource* source);
void unregister_weight_twins(const WeightTwinSource* source);

struct MirroredRange {
  const float* data = nullptr;
  size_t count = 0;
};

class WeightCopy final : public WeightTwinSource {
 public:
  // 2 bytes per element of `ranges` in the ledger's params category, registered for lookups until
  // destroyed; the ranges must not overlap another live copy's. `t` is bf16 or f16. Not yet valid:
  // refresh().
  WeightCopy(std::vector<MirroredRange> ranges, DType t);
  ~WeightCopy() override;
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
  // Packs each weight once per refresh (a process-wide generation, so a new copy at the same
  // addresses never reads an old packing).
  bool multiply_packed(const void* w16, DType t, const PackedProduct& p) const override;

 private:
  std::vector<MirroredRange> ranges_;
  std::vector<size_t> starts_;  // element offset of each range in buffer_
  TypedBuffer buffer_;
  bool valid_ = false;
  size_t refreshes_ = 0;
  uint64_t generation_ = 0;
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

// A registered source's twin of [w, w + n) in `t`, or null (no fresh twin covers it).
const void* find_weight_copy(const float* w, size_t n, DType t);
// p (its weight operand the fp32 weight [w, w + n) in `t`) run with a packed copy of the weight's
// twin; false when no source has a fresh twin it packs (ZeRO-3 gathers, a test's own arrays).
bool multiply_packed_weight(const float* w, size_t n, DType t, const PackedProduct& p);

}  // namespace ff
