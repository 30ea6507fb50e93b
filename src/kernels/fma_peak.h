#pragma once
// The hardware's arithmetic ceiling for one core: a loop of independent fused multiply-adds held
// in registers (no memory traffic), in the widest vector instruction set this CPU runs (the one
// the GEMM library picks). MFU divides by this, not by what a GEMM library reaches.
#include <string>

namespace ff {

struct FmaPeak {
  double flops_per_core = 0;  // FLOP/s (an FMA counts 2) of one core
  std::string isa;            // "avx512", "avx2+fma" or "scalar"
};

// Best of many short bursts on the calling thread (~0.2 s in all): a burst shorter than a
// scheduler time slice usually runs unshared, so the best burst is the core's own rate even on a
// busy machine.
FmaPeak measure_fma_peak();

// The best time of repeated calls of `burst` (at least 20, then until `budget_s` seconds are spent,
// at most 400): how measure_fma_peak (and the bf16 peak) time their register loops.
double best_burst_seconds(double (*burst)(), double budget_s);

}  // namespace ff
