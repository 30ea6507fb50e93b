#pragma once
// One parallel layout as the planner sees it: the degrees of the mesh, the pipeline schedule, the
// batch split, the ZeRO stage and the recompute policy. A plain value, independent of TrainConfig
// (which lives in the layer above) so the planner can enumerate thousands of them.
#include <set>
#include <string>

#include "model/activations.h"
#include "model/precision.h"
#include "parallel/context/context_layout.h"
#include "parallel/data/dp_mode.h"
#include "parallel/pipeline/pipeline_schedule.h"

namespace ff {

// Bytes per element of the model states. fp32 is what the engine trains in today; `mixed` is
// the ZeRO paper's mixed-precision Adam (16-bit params and grads, fp32 master and moments), used
// for paper-scale planning until the engine's own mixed precision lands.
enum class StatePrecision { fp32, mixed };
const char* precision_name(StatePrecision p);

struct LayoutSpec {
  int dp = 1, tp = 1, pp = 1;
  int cp = 1, ep = 1;  // context parallelism (a factor of the world), expert (divides dp x cp)
  CpComm cp_comm = CpComm::ring;  // ring | allgather | a2a (cp > 1)
  bool sp = false;
  PipeSchedule schedule = PipeSchedule::one_f_one_b;  // gpipe | 1f1b | interleaved | zb-h1 (pp > 1)
  int chunks = 1;                 // model chunks per pipeline rank (interleaved)
  int micro_batch = 1;            // sequences per micro-batch
  int grad_accum = 1;             // micro-batches per step (the pipeline's m)
  int zero = 0;
  Recompute recompute = Recompute::none;
  StatePrecision precision = StatePrecision::fp32;
  Precision gemm = Precision::fp32;  // the engine's `precision`: bf16 = bf16 GEMM inputs, fp32 states
  DpMode dp_mode = DpMode::sync;     // diloco keeps an outer state beside the replica's own
  DType pseudo_grad = DType::f32;    // diloco's Δ on the wire (the config's diloco_pseudo_grad_dtype)
  // OpenMP threads per rank, where the layout chooses them (plan's split of a node's cores into
  // ranks x threads); 0: not part of the layout, the run's own `threads` key decides.
  int threads = 0;

  int ranks() const { return dp * tp * pp * cp; }
  int global_batch() const { return micro_batch * grad_accum * dp; }  // sequences per step
  // "dp=2,tp=2,sp,pp=2,1f1b,m=4,mb=1,zero=1,recompute=selective": what `verify --layout` parses
  // (plus ",cp=2,cp_comm=a2a", ",ep=2", ",precision=bf16", ",dp_mode=diloco" when they are not the
  // defaults, and ",threads=T" when the layout sets the threads).
  std::string str() const;
};

// Parses "tp=2,pp=2,zero=1,sp,schedule=gpipe,mb=2,m=4,dp=1,recompute=full,chunks=2,threads=2" (any order,
// unnamed keys keep their defaults; schedule, cp_comm, recompute and dp_mode are named as the training
// config names them); throws naming the unknown key or the malformed value.
// given: the keys the text named (a schedule name counts as "schedule", "sp" as "sp").
LayoutSpec parse_layout(const std::string& text, std::set<std::string>* given = nullptr);

}  // namespace ff
