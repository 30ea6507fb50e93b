#pragma once
// What the model's GEMMs compute, said by whoever calls them: the GEMM entry points of
// gemm_precision.h and the linear helpers of model/linear.h take a context first. A run's trainer
// makes one from its config and hands it to the model, which passes it to every linear layer and
// to the hooks that run GEMMs; the planner's calibration, the benchmarks and the tests make their
// own. Nothing here is process-wide: two models with two contexts in one process (a test's serial
// reference beside a parallel trainer) compute each their own way.
//
// The default context is fp32 with no twin sources: every GEMM is gemm() (gemm.h) unchanged.
#include <atomic>
#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "kernels/packed_weights.h"
#include "kernels/weight_twins.h"

namespace ff {

class Fp8Recipe;

// How many products took a path, for tests that must know the path they mean to test ran. Owned
// by the caller, who points a context at it.
struct GemmCounts {
  std::atomic<long> wgrad_rows_products{0};  // weight gradients with dW's rows dealt out (wgrad_rows.h)
};

struct GemmContext {
  // The type the GEMMs read their inputs in: f32, or bf16/f16 with fp32 accumulation (both
  // operands rounded on the way in: what PyTorch's autocast does around a matmul). Norms, softmax,
  // RoPE and the loss never go through a GEMM, so they stay fp32.
  DType input_dtype = DType::f32;
  // Experimental fp8 (precision = fp8): inputs fake-quantised to e4m3 (activations, weights) or
  // e5m2 (gradients) with a per-tensor scale: the delayed-scaling recipe's when there is one
  // (fp8_recipe.h: not owned, it records each step's amaxes), else each operand's own amax.
  bool fp8 = false;
  Fp8Recipe* fp8_recipe = nullptr;
  // Sources of 16-bit twins of the weights (weight_twins.h): a 16-bit forward or dgrad GEMM reads
  // its weight's twin instead of rounding the weight again (the same rounding: the same bits). Not
  // owned; they cover disjoint fp32 ranges and outlive the GEMMs run with this context.
  std::vector<const WeightTwinSource*> twins{};
  // Whether 16-bit weight products run on packed copies of the twins (packed_weights.h), and
  // whether 16-bit weight gradients deal dW's rows out to the threads (wgrad_rows.h). Neither
  // changes what a product means (packing: not a bit; wgrad_rows: fp32 summation order only);
  // off: to compare the paths, or to save the packed copies' memory.
  bool packed_weights = true;
  bool wgrad_rows = true;
  GemmCounts* counts = nullptr;  // null: nothing counted

  // A source's fresh twin of [w, w + n) in `t`, or null (none covers it).
  const void* twin_of(const float* w, size_t n, DType t) const;
  // p, its weight operand the fp32 weight [w, w + n) in `t`, run with a packed copy of the
  // weight's twin; false when packing is off or no source has a fresh twin that it packs.
  bool multiply_packed(const float* w, size_t n, DType t, const PackedProduct& p) const;
};

}  // namespace ff
