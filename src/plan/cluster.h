#pragma once
// What the planner knows of the hardware: per device compute, memory and the links between
// devices, as a cluster.toml (written by `fivefold calibrate`, or a hardware description such as
// configs/clusters/h100-80gb.toml for paper-scale planning).
#include <string>

#include "plan/cost_rates.h"
#include "plan/engine_host.h"
#include "plan/layout_spec.h"
#include "plan/routing_load.h"

namespace ff {

struct ClusterSpec {
  std::string name;
  int devices_per_node = 1;           // ranks sharing the fast link
  double peak_flops = 0;              // per device: dense matmul peak in the training precision
  // Per device, the peak for bf16 GEMM inputs where it differs (engine clusters: calibrate
  // measures it; 0: peak16() derives it).
  double peak_flops_16 = 0;
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
  // Engine clusters: how their CPUs multiply 16-bit GEMM inputs, as calibrate found it there.
  // bf16_gemm: "AMX" or "AVX512-BF16" (oneDNN on bf16 units), "oneDNN" (oneDNN's bf16 matmul
  // without bf16 units), "widened" (no oneDNN matmul: the engine widens both operands to fp32),
  // "tiles" (fivefold's tile GEMM, the default on AMX);
  // fp16_gemm: "oneDNN" or "widened". Empty (files written before these keys): the machine
  // running the planner decides. They decide the packed weight copies and the widened operands a
  // 16-bit layout keeps (engine_host), and peak16().
  std::string bf16_gemm, fp16_gemm;
  // Link classes: a group whose ranks all sit on one node uses same_node, any other across_nodes
  // (group_spans_nodes). Built from the bandwidth and latency keys unless the file has
  // [same_node] / [across_nodes] tables of per-collective fits (what calibrate writes).
  LinkClass same_node, across_nodes;
  EngineRates rates;  // [rates]: the engine's calibrated per-core rates (engine clusters)
  RoutingLoad routing;  // [routing]: a MoE model's measured spread of routes over ep ranks
  const LinkClass& link(bool spans_nodes) const { return spans_nodes ? across_nodes : same_node; }
  // The peak a bf16 layout's MFU divides by: peak_flops_16 when known; else on this engine twice
  // the fp32 FMA peak where the CPU has bf16 dot products (kernels/bf16_peak.h), the FMA peak
  // where bf16 is widened to fp32; a hardware description's peak_flops is already its 16-bit one.
  double peak16() const;
  // The host a rank of this cluster is, with `threads` per rank: this process's, with the file's
  // 16-bit GEMM paths where it names them.
  EngineHost engine_host(int threads) const;
};

// Whether some group along a mesh axis spans nodes: the axis's ranks sit `stride` apart (the
// product of the faster axes' degrees, in Megatron's order tp, cp, dp, pp), n of them per group,
// `world` ranks placed on nodes of per_node consecutive ranks.
bool group_spans_nodes(int stride, int n, int world, int per_node);

// Reads a cluster.toml; unknown keys and missing required ones throw naming the file and key.
ClusterSpec load_cluster(const std::string& path);
std::string cluster_to_toml(const ClusterSpec& c);
}  // namespace ff
