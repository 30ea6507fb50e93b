#pragma once
// Step time of a layout as this engine runs it on CPU ranks, from calibrated per-core rates
// (plan/cost_rates.h), never from runs of the layouts themselves:
//  - GEMMs op by op (the rank's slices, rows = its tokens) at the measured rate of their size and
//    input precision; flash attention at the measured seconds per B H T^2 D; the non-GEMM work
//    (norms, RoPE, residuals, SwiGLU, cross-entropy, AdamW) as bytes over the bandwidth of its
//    working set;
//  - collectives (tp, cp, ep, pp, dp/ZeRO) by the alpha-beta of the link class the group uses;
//  - the pipeline as m micro-batches through the slowest stage plus the schedule's fill;
//  - a rank's T threads worth T x the measured efficiency of each kind of work at T threads
//    (plan/thread_scaling.h) over the efficiency the rates were measured at;
//  - ranks x threads beyond the cores the job gets (calibrated) time-share them: MPI waits yield, so the step is the
//    larger of the critical path and all ranks' CPU work over the cores;
//  - across nodes, the kernel's CPU for the data-parallel bytes the compute hides joins that work.
#include "model/model_config.h"
#include "plan/cluster.h"
#include "plan/layout_spec.h"

namespace ff {

struct EngineStepTime {
  double compute = 0, bubble = 0, tp_comm = 0, pp_comm = 0, dp_comm = 0, other = 0;  // seconds per step
  // tp_comm: the tp, cp and ep collectives; pp_comm: the stages' sends and receives.
  // What the step waits beyond its critical path for cores the ranks share, with each other, other
  // work and the kernel's work for the link's hidden bytes (link_cpu).
  double core_sharing = 0;
  // CPU seconds per step a node's kernel spends on the data-parallel bytes its ranks send and
  // receive across nodes while they compute (LinkClass::cpu_seconds_per_byte; 0: not measured).
  double link_cpu = 0;
  // compute + other by kind, on the slowest pipeline stage: GEMMs, attention, element-wise
  // kernels (norms, RoPE, SwiGLU, the loss, embedding), and the optimizer's per-step work.
  double gemm = 0, attention = 0, elementwise = 0, optimizer = 0;
  double step = 0;
};

EngineStepTime engine_step_time(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl, int threads);

}  // namespace ff
