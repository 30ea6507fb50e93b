#pragma once
// The training loop of one rank: data, model, model state (replicated or ZeRO-sharded),
// schedule, checkpoints, metrics. Construction does every check that can fail (config, data files,
// vocabulary, checkpoint compatibility) before the first heavy allocation, so bad input never
// costs a long wait and never touches a good checkpoint. Only world rank 0 (the leader) writes
// files and prints.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "core/memory.h"
#include "io/data_loader.h"
#include "io/metrics.h"
#include "io/trace.h"
#include "model/llama.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_hooks.h"
#include "parallel/tensor/tp_checkpoint.h"
#include "parallel/tensor/tensor_plan.h"
#include "parallel/tensor/tensor_replicas.h"
#include "train/dp_mode_config.h"
#include "train/lr_schedule.h"
#include "train/train_config.h"

namespace ff {

struct StepRecord {
  int step;
  double loss;
  double grad_norm;
  float lr;
  double seconds;
};

class Trainer {
 public:
  // mesh: the ranks and their axes (null: one process); cfg.dp, cp, tp, pp must equal its
  // degrees. The mesh must outlive the trainer.
  Trainer(TrainConfig cfg, std::string out_dir, const Mesh* mesh = nullptr);
  ~Trainer();
  // Trains from the current step to cfg.steps (or cfg.stop_at); writes the final checkpoint.
  void run();
  // One optimizer step on the next global batch; returns its record (loss over all ranks).
  StepRecord train_step();
  double evaluate();  // mean validation loss over cfg.eval_batches micro-batches
  void save();        // collective: every rank calls it, rank 0 writes

  const TrainConfig& config() const { return cfg_; }
  const Llama& model() const { return *model_; }
  // The full parameters (gathered from the ZeRO-3 shards and tensor-parallel blocks; collective).
  std::vector<float> full_params();
  ModelState& state() { return *state_; }
  int step() const { return step_; }
  const std::vector<StepRecord>& history() const { return history_; }
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
  // The layout-free full state (checkpoint) into this rank's part, and back.
  void load_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v);
  // The full (unsharded) parameters and AdamW moments: collective over dp and tp.
  void gather_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v);
  void log_progress(const StepRecord& r, double tokens_per_s, double val_loss);
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
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<PlanSlicer> slicer_;               // tp > 1
  std::unique_ptr<TensorParallelHooks> tp_group_;    // tp > 1
  std::unique_ptr<TensorReplicas> tp_replicas_;      // tp > 1
  std::vector<WeightedRange> norm_weights_;  // beyond the state's replicas: the tied embedding's copies
  std::unique_ptr<Llama> model_;
  std::unique_ptr<PipelineExecutor> executor_;       // pp > 1
  std::unique_ptr<LlamaStages> stages_;              // pp > 1
  Comm tied_;  // pp > 1 with tied embeddings: the first and last stage, which both hold the embedding
  bool tied_ends_ = false;  // this rank is one of them
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ModelState> state_;
  LrSchedule schedule_;
  Straggler straggler_;  // simulate_straggler: sleeps in proportion to the last step's compute
  double last_compute_seconds_ = 0;
  std::unique_ptr<MetricsWriter> metrics_;
  std::vector<int32_t> batch_inputs_, batch_targets_;  // this rank's rows of the global batch
  std::vector<StepRecord> history_;
  int step_ = 0;
  double flops_per_token_ = 0, sgemm_peak_flops_ = 0;
  double run_seconds_ = 0;
  int steps_timed_ = 0;
};

}  // namespace ff
