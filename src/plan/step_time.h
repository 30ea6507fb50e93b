#pragma once
// Predicted step time and memory of one layout on one cluster: compute from the cluster's GEMM
// rate, communication from the alpha-beta model (latency + bytes / bandwidth per link class),
// the data-parallel reduction overlapped with the last backward, pipeline bubbles by the
// schedules' closed forms (FORMULAS.md). Memory is the engine's exact model on this machine and
// the published closed forms (ZeRO, Korthikanti) at paper scale.
#include <string>

#include "model/model_config.h"
#include "plan/cluster.h"
#include "plan/layout_spec.h"
#include "plan/memory_model.h"

namespace ff {

struct LayoutPrediction {
  LayoutSpec layout;
  RankMemory memory;  // the largest rank's, by category
  // Seconds per step; step_seconds is their sum. tp_comm: tp's collectives (and cp's and ep's on
  // engine clusters); core_sharing: engine ranks waiting for the cores they outnumber.
  double compute = 0, bubble = 0, tp_comm = 0, pp_comm = 0, dp_comm = 0, core_sharing = 0;
  double link_cpu = 0;  // engine clusters: a node's kernel CPU seconds for the link's hidden bytes (in core_sharing)
  double gemm = 0, attention = 0, elementwise = 0, optimizer = 0;  // engine clusters: compute by kind
  double step_seconds = 0, tokens_per_s = 0, mfu = 0;
  bool fits = false;
};

// Paper-scale memory of the largest pipeline stage (the first: embedding plus p in-flight
// micro-batches of its layers), by category.
RankMemory paper_memory(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl);

// threads: OpenMP threads per rank (engine mode only).
LayoutPrediction predict_layout(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl, int threads);

}  // namespace ff
