#pragma once
// The training loop of one rank: data, model, model state (replicated or ZeRO-sharded),
// schedule, checkpoints, metrics. Construction does every check that can fail (config, data files,
// vocabulary, checkpoint compatibility) before the first heavy allocation, so bad input never
// costs a long wait and never touches a good checkpoint. Only world rank 0 (the leader) writes
// files and prints.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "core/memory.h"
#include "io/data_loader.h"
#include "io/metrics.h"
#include "io/trace.h"
#include "kernels/gemm_context.h"
#include "kernels/weight_copy.h"
#include "model/llama.h"
#include "parallel/context/context_parallel.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_hooks.h"
#include "parallel/tensor/tp_checkpoint.h"
#include "parallel/tensor/tensor_plan.h"
#include "parallel/tensor/tensor_replicas.h"
#include "train/checkpoint_meta.h"
#include "train/checkpoint_saver.h"
#include "train/dp_mode_config.h"
#include "train/fp8_training.h"
#include "train/lr_schedule.h"
#include "train/moe_training.h"
#include "train/nonfinite.h"
#include "train/resume_check.h"
#include "train/train_config.h"

namespace ff {

struct StepRecord {
  int step;
  double loss;
  double grad_norm;
  float lr;
  double seconds;
  float loss_scale = 0;       // fp16: the scale this step's gradients carried (0: no loss scaling)
  bool skipped = false;       // not applied: an fp16 overflow, or non-finite with on_nonfinite = skip
  double spike_median = 0;    // > 0: the loss exceeded loss_spike x this recent median
};

class Trainer {
 public:
  // mesh: the ranks and their axes (null: one process); cfg.dp, cp, tp, pp must equal its
  // degrees. The mesh must outlive the trainer.
  Trainer(TrainConfig cfg, std::string out_dir, const Mesh* mesh = nullptr);
  // Trains from the current step to cfg.steps (or cfg.stop_at); writes the final checkpoint.
  void run();
  // One optimizer step on the next global batch; returns its record (loss over all ranks).
  StepRecord train_step();
  double evaluate();  // mean validation loss over cfg.eval_batches micro-batches
  // Collective: every rank writes its own pieces; rank 0 then writes the manifest. With
  // ckpt_async the write continues in the background until the next save or finish_saves().
  void save();
  void finish_saves();  // collective: completes a background save (run() calls it at the end)

  const TrainConfig& config() const { return cfg_; }
  const Llama& model() const { return *model_; }
  // precision = fp8 only: the delayed scales of every tensor
  const Fp8Recipe* fp8_scaling() const { return fp8_training_ ? &fp8_training_->recipe() : nullptr; }
  // What the model's GEMMs compute, and (tests) how many took which path.
  const GemmContext& gemm_context() const { return gemm_; }
  const GemmCounts& gemm_counts() const { return gemm_counts_; }
  ContextParallel* context() { return cp_.get(); }  // null unless cp > 1
  // The full parameters (gathered from the ZeRO-3 shards and tensor-parallel blocks; collective;
  // for tests and inspection, never used by checkpoints).
  std::vector<float> full_params();
  ModelState& state() { return *state_; }
  int step() const { return step_; }
  const std::vector<StepRecord>& history() const { return history_; }
  // The last step's routing over all ranks (null: a dense model).
  const MoeStepSummary* moe_summary() const { return moe_ ? &moe_->last() : nullptr; }
  bool quiet = false;  // tests silence the progress lines
  // Test-only: called on the fully reduced gradients, before the norm and the optimizer step, so
  // a test can inject a gradient-scale error and prove the parity checks catch it.
  std::function<void(ModelState&)> after_grads_reduced;

 private:
  int world_rank() const { return mesh_ ? mesh_->world().rank() : 0; }
  int world_size() const { return mesh_ ? mesh_->world().size() : 1; }
  bool leader() const { return world_rank() == 0; }  // rank 0 on every axis, cp included
  // x summed over the ranks differing from this one only along `axes` (x itself without a mesh).
  double sum_over(double x, std::initializer_list<MeshAxis> axes) const;
  // Fills this rank's state from a sharded checkpoint folder, reading only what it holds; the
  // caller then calls state_->after_load() (collective). Throws CheckpointDamaged on damage.
  void load_checkpoint_state(const std::string& step_dir);
  // Refuses (naming the checkpoint and the fix) a checkpoint this run cannot continue: another
  // model, another tokenizer, a refused config change, a step past `steps` (trainer_resume.cpp).
  void check_resume(const CheckpointMeta& resume, uint64_t tokenizer_checksum, const std::string& tok_path);
  // Loads `resume` collectively; when any rank finds its data damaged, every rank goes back to
  // the previous complete checkpoint (checked like the first), and the damaged folders are set
  // aside. Returns the checkpoint loaded; throws an AgreedError when none is left.
  CheckpointMeta load_resume(CheckpointMeta resume, uint64_t tokenizer_checksum, const std::string& tok_path);
  void log_progress(const StepRecord& r, double tokens_per_s, double val_loss);
  // A step whose reduced loss or gradient norm is non-finite (or the norm 0): skipped, or located
  // and stopped with an AgreedError per on_nonfinite. Collective (trainer_nonfinite.cpp).
  StepRecord nonfinite_step(double loss, double norm, float grad_scale,
                            std::chrono::steady_clock::time_point t0);
  // The periodic checkpoint of run(), deferred while the last step's loss was a spike.
  void checkpoint_if_due(const StepRecord& r, int last);
  void write_trace();

  TrainConfig cfg_;
  std::string out_dir_;
  const Mesh* mesh_ = nullptr;
  int dp_rank_ = 0, dp_size_ = 1;    // the data coordinate: which rows of the batch this rank reads
  const Comm* tp_ = nullptr;         // the mesh's groups with more than one rank, else null
  int tp_rank_ = 0, tp_size_ = 1;
  const Comm* pp_ = nullptr;
  int pp_rank_ = 0, pp_size_ = 1;
  StageSplit split_;                                 // pp > 1
  ModelParts parts_;                                 // this rank's parts of the model
  std::shared_ptr<const std::vector<int32_t>> train_tokens_, val_tokens_;
  std::unique_ptr<LossScaler> scaler_;               // precision = fp16
  // What the run's GEMMs compute (precision, fp8 scaling, weight twins, packing), read by the
  // model at every GEMM: it outlives the model. The counts are for tests.
  GemmContext gemm_;
  GemmCounts gemm_counts_;
  bool fp8_ = false;                                 // precision = fp8
  std::unique_ptr<Fp8Training> fp8_training_;        // precision = fp8: scales by tensor, the context's recipe
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<PlanSlicer> slicer_;               // tp > 1
  std::unique_ptr<TensorParallelHooks> tp_group_;    // tp > 1
  std::unique_ptr<TensorReplicas> tp_replicas_;      // tp > 1
  std::unique_ptr<ContextParallel> cp_;              // cp > 1
  std::unique_ptr<ModelHooks> cp_hooks_;             // cp > 1 without tp: serial hooks carrying cp's attention
  std::vector<WeightedRange> norm_weights_;  // beyond the state's replicas: the tied embedding's copies
  std::unique_ptr<Llama> model_;
  std::unique_ptr<MoeTraining> moe_;                 // a model with MoE blocks
  std::unique_ptr<PipelineExecutor> executor_;       // pp > 1
  std::unique_ptr<LlamaStages> stages_;              // pp > 1
  Comm tied_;  // pp > 1 with tied embeddings: the first and last stage, which both hold the embedding
  bool tied_ends_ = false;  // this rank is one of them
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ModelState> state_;
  std::unique_ptr<WeightCopy> weight_copy_;  // 16-bit runs: the weights rounded once per step
  LrSchedule schedule_;
  Straggler straggler_;  // simulate_straggler: sleeps in proportion to the last step's compute
  double last_compute_seconds_ = 0;
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<CheckpointSaver> saver_;
  int saved_step_ = -1;  // the step of the checkpoint this state is (resumed from or last saved)
  std::vector<int32_t> batch_inputs_, batch_targets_;  // this rank's rows of the global batch
  std::vector<StepRecord> history_;
  LossSpikeWatch spikes_{0};
  bool save_deferred_ = false;  // a checkpoint was due right after a loss spike
  std::vector<ConfigChange> resume_changes_;  // accepted config changes against the checkpoint's
  int step_ = 0;
  std::string memory_line_;  // the start-up memory estimate against what the machine has
  double flops_per_token_ = 0;
  // The job's FMA peak and GEMM ceiling: per-core rates times the cores its ranks keep busy.
  double peak_flops_ = 0, gemm_ceiling_flops_ = 0;
  double run_seconds_ = 0;
  int steps_timed_ = 0;
};

}  // namespace ff
