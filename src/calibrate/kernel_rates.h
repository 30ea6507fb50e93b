#pragma once
// The engine's own non-GEMM kernels, timed by `fivefold calibrate` as a training step runs them:
// the optimizer's per-parameter work (zeroing the gradients, their norm, the clip, AdamW), RMSNorm,
// RoPE and SwiGLU per element, the cross-entropy per logit, the 16-bit weight copy per weight, and
// flash attention by sequence length and head width. Streaming them as bytes over a triad
// bandwidth missed most of their cost: AdamW's exact divide and square root make it compute bound
// (about 3 ns per parameter here against 0.5 from its bytes), and the norms and the
// cross-entropy reduce along rows. Every rank runs each kernel at once (`sync`: a barrier before
// each timing; null when rank 0 measures alone), so the rates include the sharing of memory
// bandwidth and caches a step sees.
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "plan/cost_rates.h"

namespace ff {

// Pushes every operand out of the caches before a timing (64 MiB written; untimed): in a step the
// backward reads activations the forward saved long before, so kernels meet them in memory.
class CacheFlusher {
 public:
  CacheFlusher();
  void operator()();

 private:
  TrackedBuffer<float> junk_;
  float value_ = 0;
};

// Fills r's kernel curves with per-core figures (`threads` threads per rank, scaled to one).
void measure_kernel_rates(const Comm* sync, int threads, EngineRates& r, CacheFlusher& flush);

// The attention tables measure_kernel_rates fills, in the order calibrate shares them.
std::vector<GemmTable*> attention_tables(EngineRates& r);
// Context parallelism's block tables (full fp32, bf16, then diagonal fp32, bf16), by chunk length.
std::vector<GemmTable*> cp_block_tables(EngineRates& r);

// The sizes measure_kernel_rates uses, so that ranks receiving rank 0's numbers know the shape.
void shape_kernel_rates(EngineRates& r);

}  // namespace ff
