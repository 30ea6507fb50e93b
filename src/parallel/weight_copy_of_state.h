#pragma once
// The run's once-per-step 16-bit weight copy (kernels/weight_copy.h) over the parameter buffers a
// model state hands the model.
#include <memory>

#include "core/dtype.h"
#include "kernels/weight_copy.h"
#include "parallel/model_state.h"

namespace ff {

// Null when there is nothing to mirror: fp32 GEMM inputs, fp8 (quantised per call from fp32),
// or sharded parameters (ZeRO-3 over more than one rank), whose model reads gathered buffers:
// those gather 16-bit values and are their own twins (parallel/zero/gather_pool.h).
std::unique_ptr<WeightCopy> make_weight_copy(ModelState& state, DType gemm_dtype, bool fp8, bool gathered);

}  // namespace ff
