#include "parallel/weight_copy_of_state.h"

#include <vector>

namespace ff {

std::unique_ptr<WeightCopy> make_weight_copy(ModelState& state, DType gemm_dtype, bool fp8, bool gathered) {
  if (gemm_dtype == DType::f32 || fp8 || gathered) return nullptr;
  // Every run this rank holds: the full replicated buffer (zero 0, 1, 2), split per segment when
  // the state has several parameter groups.
  std::vector<MirroredRange> ranges;
  for (const StateRun& r : state.checkpoint_runs(false).params) ranges.push_back({r.data, r.count});
  return std::make_unique<WeightCopy>(std::move(ranges), gemm_dtype);
}

}  // namespace ff
