#pragma once
// fp8 delayed scaling inside the model: Transformer Engine's default recipe (DelayedScaling with
// amax_history_len = 1024, margin = 0, amax_compute_algo = "max"). Every fp8 GEMM operand is a
// tensor with its own scale, scale = fp8_max / max(amax history) / 2^margin, computed only from
// the amaxes of the steps BEFORE the current one; what a step observes (the max over its
// micro-batches and recomputations) enters the history once, at end_step(). A tensor with no
// history yet uses scale 1, as TE initialises it.
//
// Identity: a GEMM does not know its layer, but the layer's weight buffers do. The forward GEMM
// (x W^T) and the input-gradient GEMM (dy W) are keyed by W's address, the weight-gradient GEMM
// (dy^T x) by dW's. These are fixed for the whole run where parameters and gradients live in
// fixed buffers (serial, DDP, ZeRO-1, tp, pp); ZeRO-2/3 hand out alternating staging and gather
// buffers, so the trainer refuses fp8 there (train_config: precision = fp8 needs zero <= 1).
// Amaxes are per rank (TE reduces them over the data-parallel group; here each rank keeps its own).
#include <cstddef>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/fp8.h"
#include "kernels/gemm_precision.h"

namespace ff {

class Fp8Recipe {
 public:
  explicit Fp8Recipe(int history = 1024, int margin = 0) : history_(history), margin_(margin) {}
  // operand 0 = A, 1 = B of the GEMM keyed `key` with `role`: quantises x[0, n) in place with the
  // tensor's current scale and records its amax for this step.
  void quantise(const void* key, GemmRole role, int operand, Fp8Format f, float* x, size_t n);
  // Once per optimizer step: every tensor seen this step records its amax, its scale moves.
  void end_step();

  // For tests: per tensor, the scale each step used and the amax each step recorded.
  struct Log {
    Fp8Format format;
    std::vector<float> scales, amaxes;  // one per step in which the tensor was used
  };
  std::vector<Log> logs() const;
  size_t tensors() const { return slots_.size(); }

 private:
  struct Slot {
    Fp8DelayedScale scale;
    float pending = 0;  // this step's amax so far
    bool used = false;
    Log log;
  };
  int history_, margin_;
  std::map<std::tuple<const void*, int, int>, Slot> slots_;
};

// The recipe fp8 GEMMs use (process-wide, like gemm_fp8()); null: current scaling, each operand
// scaled by its own amax (the GEMM-level default of gemm_precision.h).
void set_fp8_recipe(Fp8Recipe* r);
Fp8Recipe* fp8_recipe();

}  // namespace ff
