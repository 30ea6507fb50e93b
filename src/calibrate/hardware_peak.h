#pragma once
// The denominators of MFU: the hardware's FMA peak per core (kernels/fma_peak.h) and the GEMM
// library's one-thread sgemm rate per core, measured once per machine and kept in a cache file
// (FIVEFOLD_PEAK_FILE, else $XDG_CACHE_HOME or ~/.cache, /fivefold/peak.json), keyed by the CPU
// model and the instruction set, so every later run divides by the same numbers.
#include <string>

namespace ff {

struct HardwarePeak {
  double fma_flops_per_core = 0;    // FLOP/s, register-only FMA loop
  double sgemm_flops_per_core = 0;  // FLOP/s, one-thread sgemm of the GEMM backend
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
