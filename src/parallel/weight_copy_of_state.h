#pragma once
// The run's once-per-step 16-bit weight copy (kernels/weight_copy.h) over the parameter buffers a
// model state hands the model.
#include <memory>

#include "core/dtype.h"
#include "kernels/weight_copy.h"
#include "parallel/model_state.h"

namespace ff {

// Null when there is nothing to mirror: fp32 GEMM inputs, fp8 (quantised per call from fp32),
// or ZeRO-3, whose model reads gathered buffers rather than the shards this rank holds (a copy
// of the shards would cost 2 bytes per element and never be read).
std::unique_ptr<WeightCopy> make_weight_copy(ModelState& state, DType gemm_dtype, bool fp8, int zero);

}  // namespace ff
