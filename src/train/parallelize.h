#pragma once
// One rank's model under the run's layout, built in one step from the outside (principle 6 in
// docs/principles.md): tensor parallelism slices the layout and brings its hooks, context
// parallelism hands attention the whole sequence, expert parallelism places the experts, the
// pipeline keeps this rank's stages, and the model state (replicated or ZeRO-sharded per parameter
// group) owns parameters, gradients and the optimizer. What comes back runs a step's micro-batches
// and an evaluation's forwards the same way for every layout, so the trainer never branches on one.
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/mesh.h"
#include "io/trace.h"
#include "kernels/gemm_context.h"
#include "kernels/weight_copy.h"
#include "model/llama.h"
#include "parallel/context/context_parallel.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_executor.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/pipeline/stage_split.h"
#include "parallel/tensor/tensor_hooks.h"
#include "parallel/tensor/tensor_plan.h"
#include "parallel/tensor/tensor_replicas.h"
#include "train/fp8_training.h"
#include "train/moe_training.h"
#include "train/train_config.h"

namespace ff {

// The communication one training step could not hide behind compute (the last step's): seconds
// this rank was blocked on communication inside forward and backward (ZeRO-3 gathers, staging
// reduce-scatters, tp/cp/ep exchanges, pipeline transfers), and the wall time from the last
// backward kernel until the gradients' reductions were done.
struct ExposedComm {
  double in_compute_s = 0;
  double after_backward_s = 0;
  double total_s() const { return in_compute_s + after_backward_s; }
};

class ParallelModel {
 public:
  // Collective over the mesh (null: one process): every rank builds its groups in the same order.
  // cfg is resolved and validated (its degrees are the mesh's); tracer may be null. The model
  // computes its GEMMs as `gemm` says; this adds to it the fp8 recipe and the 16-bit weight twins
  // it builds, so `gemm` must outlive this object.
  ParallelModel(const TrainConfig& cfg, const Mesh* mesh, Tracer* tracer, GemmContext& gemm);
  ~ParallelModel();
  ParallelModel(const ParallelModel&) = delete;
  ParallelModel& operator=(const ParallelModel&) = delete;

  // Forward and backward of this rank's rows of a global batch (micro_batch x grad_accum whole
  // sequences), the gradients scaled by grad_scale; returns this rank's loss sum over its loss
  // targets, already summed over the pipeline (every stage returns the same number). MoE:
  // balance_weight (MoeTraining::begin_step) weighs the balancing losses.
  double forward_backward(const int32_t* inputs, const int32_t* targets, float grad_scale,
                          double balance_weight);
  // Waits for the gradients' reductions; then sums the tied embedding's two copies (pp > 1).
  void finish_grads();
  // The last forward_backward + finish_grads' exposed communication.
  const ExposedComm& exposed_comm() const { return exposed_; }
  // Sum of squared gradients over this rank's state, every replicated or tied element counted once
  // over the ranks holding it (to be summed over tp, then pp, by the caller).
  double grad_square_sum() { return state_->grad_square_sum(norm_weights_); }
  // The forward-only loss sum of micro_batch whole sequences (evaluation), pipeline included.
  double forward_loss(const int32_t* inputs, const int32_t* targets);
  // The full parameters, gathered from ZeRO-3 shards, tp blocks, experts and stages (collective;
  // tests and inspection only: checkpoints never gather).
  std::vector<float> full_params();

  // Document masks in packed rows (model/documents.h); under cp, read off the whole sequences.
  void set_document_breaks(const DocumentBreaks& breaks);
  Llama& model() { return *model_; }
  const Llama& model() const { return *model_; }
  ModelState& state() { return *state_; }
  WeightCopy* weight_copy() { return weight_copy_.get(); }
  Fp8Training* fp8() { return fp8_.get(); }
  MoeTraining* moe() { return moe_.get(); }
  ContextParallel* context() { return cp_.get(); }
  const ParamLayout& layout() const { return model_->layout(); }
  int tp_size() const { return tp_size_; }
  int tp_rank() const { return tp_rank_; }
  int pp_size() const { return pp_size_; }
  int pp_rank() const { return pp_rank_; }
  const StageSplit* split() const { return pp_size_ > 1 ? &split_ : nullptr; }

 private:
  const TrainConfig& cfg_;
  const Mesh* mesh_;
  Tracer* tracer_;
  const Comm* tp_ = nullptr;  // the mesh's groups with more than one rank, else null
  int tp_rank_ = 0, tp_size_ = 1;
  const Comm* pp_ = nullptr;
  int pp_rank_ = 0, pp_size_ = 1;
  StageSplit split_;  // pp > 1
  ModelParts parts_;  // this rank's parts of the model
  std::unique_ptr<PlanSlicer> slicer_;             // tp > 1
  std::unique_ptr<TensorParallelHooks> tp_hooks_;  // tp > 1
  std::unique_ptr<TensorReplicas> tp_replicas_;    // tp > 1
  std::unique_ptr<ContextParallel> cp_;            // cp > 1
  std::unique_ptr<ModelHooks> cp_hooks_;           // cp > 1 without tp: serial hooks carrying cp's attention
  std::vector<WeightedRange> norm_weights_;        // beyond the state's replicas: the tied embedding's copies
  std::unique_ptr<Llama> model_;
  std::unique_ptr<MoeTraining> moe_;               // a model with MoE blocks
  std::unique_ptr<ModelState> state_;
  std::unique_ptr<Fp8Training> fp8_;               // precision = fp8: scales by tensor, the context's recipe
  std::unique_ptr<WeightCopy> weight_copy_;        // 16-bit runs: the weights rounded once per step
  std::unique_ptr<PipelineExecutor> executor_;     // pp > 1
  std::unique_ptr<LlamaStages> stages_;            // pp > 1
  Comm tied_;  // pp > 1 with tied embeddings: the first and last stage, which both hold the embedding
  bool tied_ends_ = false;  // this rank is one of them
  ExposedComm exposed_;
  double waited_at_step_start_ = 0;  // comm_wait_seconds() when forward_backward began
};

}  // namespace ff
