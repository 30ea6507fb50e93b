#pragma once
// What the planner knows of the hardware: per device compute, memory and the links between
// devices, as a cluster.toml (written by `fivefold calibrate`, or a hardware description such as
// configs/clusters/h100-80gb.toml for paper-scale planning).
#include <string>

#include "plan/layout_spec.h"

namespace ff {

struct ClusterSpec {
  std::string name;
  int devices_per_node = 1;           // ranks sharing the fast link
  double peak_flops = 0;              // per device: dense matmul peak in the training precision
  double gemm_efficiency = 0.5;       // share of peak large GEMMs reach (calibrated or published)
  double memory_bytes = 0;            // per device, usable for training
  double intra_bandwidth = 0;         // bytes/s per device inside a node (NVLink, shared memory)
  double inter_bandwidth = 0;         // bytes/s per device across nodes (InfiniBand)
  double intra_latency = 5e-6;        // seconds per collective step inside a node
  double inter_latency = 20e-6;       // across nodes
  StatePrecision precision = StatePrecision::mixed;
  int activation_bytes = 2;           // bytes per activation element
  bool flash_attention = true;        // no s x s scores kept
  // This engine on this machine's CPUs: memory comes from the engine's exact model (fp32).
  bool engine = false;
};

// Reads a cluster.toml; unknown keys and missing required ones throw naming the file and key.
ClusterSpec load_cluster(const std::string& path);
std::string cluster_to_toml(const ClusterSpec& c);
// This machine as the engine runs on it: FMA peak and sgemm share from the cached measurement,
// MemAvailable shared by `ranks`, shared-memory links with defaults until calibrated.
ClusterSpec this_machine(int ranks);

}  // namespace ff
