#include "calibrate/this_machine.h"

#include <algorithm>

#include "calibrate/hardware_peak.h"
#include "kernels/cpu_isa.h"
#include "plan/memory_fit.h"

namespace ff {

ClusterSpec this_machine(int ranks) {
  const HardwarePeak p = machine_peak();
  ClusterSpec c;
  c.name = "this machine (" + p.cpu + ", " + p.isa + ")";
  c.devices_per_node = ranks;
  // A rank's "device" is its share of the cores (less than one core when ranks outnumber them).
  c.peak_flops = p.fma_flops_per_core * double(p.cores) / std::max(1, ranks);
  c.gemm_efficiency = p.sgemm_flops_per_core / p.fma_flops_per_core;
  c.memory_bytes = double(machine_available_bytes()) / ranks;
  c.intra_bandwidth = c.inter_bandwidth = 5e9;  // shared-memory MPI, until `calibrate` measures it
  c.intra_latency = c.inter_latency = 5e-6;
  c.precision = StatePrecision::fp32;
  c.activation_bytes = 4;
  c.engine = true;
  const EngineHost here = this_engine_host(1);
  c.bf16_gemm = gemm_tiles() == GemmTiles::amx        ? "tiles"
                : !here.native_bf16                      ? "widened"
                : bf16_path() == Bf16Path::emulated ? "oneDNN"
                                                     : bf16_path_name(bf16_path());
  c.fp16_gemm = here.native_fp16 ? "oneDNN" : "widened";
  c.same_node = c.across_nodes = LinkClass::uniform(c.intra_latency, c.intra_bandwidth);
  // Uncalibrated rates: the one-thread sgemm at every size, attention at the same rate (7 T^2 D
  // FLOPs per B H of causal forward + backward), a DRAM-like bandwidth.
  c.rates.cores = p.cores;
  c.rates.gemm_fp32.add(1, 1, p.sgemm_flops_per_core);
  c.rates.gemm_bf16 = c.rates.gemm_fp32;
  c.rates.attention.points = {{1, 7.0 / p.sgemm_flops_per_core}};
  c.rates.bandwidth.points = {{1, 10e9}};
  c.rates.step_overhead = 1e-3;
  return c;
}

}  // namespace ff
