#pragma once
// What the engine's allocations depend on besides the model and the layout: the machine a rank
// runs on. Its OpenMP threads (the kernels' per-thread scratch), and whether its 16-bit GEMMs are
// native (oneDNN reads a packed copy of the weights) or emulated (both operands widened to fp32 in
// scratch). The planner takes these from the cluster file when the file names them, so a cluster
// calibrated on other CPUs is planned for its own CPUs, not for the machine running `plan`.
#include "model/precision.h"

namespace ff {

struct EngineHost {
  int threads = 1;              // OpenMP threads per rank
  bool native_bf16 = false;     // oneDNN multiplies bf16 inputs (AMX or AVX512-BF16)
  bool native_fp16 = false;     // oneDNN multiplies fp16 inputs
  bool packed_weights = true;   // config `packed_weights`: the 16-bit weights kept pre-packed
  // The bf16 GEMMs run on fivefold's tile GEMM (kernels/gemm_amx.h: the default on an AMX CPU,
  // or its scalar model): no packed weights, no widened operands; each product packs its
  // operands into the calling thread's scratch instead.
  bool tile_gemm = false;
  // Whether precision p's GEMMs multiply 16-bit inputs natively here (false at fp32 and fp8,
  // which the engine runs in fp32 arithmetic).
  bool native_16bit(Precision p) const;
  // Whether precision p's GEMMs run on the tile GEMM here (bf16 only).
  bool on_tile_gemm(Precision p) const { return tile_gemm && p == Precision::bf16; }
};

// This process: its CPU as oneDNN dispatches on it; `packed_weights` the run's config key of
// that name (on unless a run turns it off).
EngineHost this_engine_host(int threads, bool packed_weights = true);

}  // namespace ff
