#pragma once
// The denominators of MFU: the hardware's FMA peak per core (kernels/fma_peak.h), its bf16 GEMM
// peak where it has one (kernels/bf16_peak.h: the AMX tile unit's or the bf16 dot products', a
// bf16 run's ceiling) and the GEMM
// library's one-thread sgemm rate per core, measured once per machine and kept in a cache file
// (FIVEFOLD_PEAK_FILE, else $XDG_CACHE_HOME or ~/.cache, /fivefold/peak.json), keyed by the CPU
// model and the instruction set, so every later run divides by the same numbers.
#include <string>

namespace ff {

struct HardwarePeak {
  double fma_flops_per_core = 0;    // FLOP/s, register-only FMA loop
  double sgemm_flops_per_core = 0;  // FLOP/s, one-thread sgemm of the GEMM backend
  // FLOP/s, the bf16 GEMM ceiling (kernels/bf16_peak.h): the AMX tile unit's where the bf16 GEMMs
  // run on it, else register-only AVX512-BF16 dot products; 0 = neither.
  double bf16_flops_per_core = 0;
  std::string bf16_unit;            // which of the two ("AMX tiles", "AVX512-BF16 dot products", "none")
  // The arithmetic ceiling for GEMM inputs of this kind: bf16's own where the CPU multiplies bf16,
  // else the FMA peak (inputs widened to fp32).
  double peak_flops_per_core(bool bf16_inputs) const {
    return bf16_inputs && bf16_flops_per_core > 0 ? bf16_flops_per_core : fma_flops_per_core;
  }
  std::string isa, cpu;             // what the numbers belong to
  int cores = 1;                    // cores of this machine
  std::string source;               // the cache file read, or "measured" (and written to it)
};

std::string peak_cache_path();
// Reads the cache when it names this CPU and instruction set; otherwise measures (~0.5 s) and
// writes it (a write failure leaves the measurement in use).
HardwarePeak machine_peak();

// Cores a job keeps busy: per machine the ranks there times their threads, at most its cores.
int cores_in_use(int world_ranks, int ranks_per_machine, int threads, int cores_per_machine);

}  // namespace ff
