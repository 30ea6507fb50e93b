#pragma once
// The training loop of one rank: data, model, model state (replicated or ZeRO-sharded),
// schedule, checkpoints, metrics. Construction does every check that can fail (config, data files,
// vocabulary, checkpoint compatibility) before the first heavy allocation, so bad input never
// costs a long wait and never touches a good checkpoint. Only data-parallel rank 0 writes files
// and prints.
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "io/data_loader.h"
#include "io/metrics.h"
#include "io/trace.h"
#include "model/llama.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_hooks.h"
#include "parallel/tensor/tensor_parallel.h"
#include "parallel/tensor/tensor_plan.h"
#include "train/lr_schedule.h"
#include "train/train_config.h"

namespace ff {

class Comm;

struct StepRecord {
  int step;
  double loss;
  double grad_norm;
  float lr;
  double seconds;
};

class Trainer {
 public:
  // dp: the data-parallel group (null or size 1 for one process). cfg.dp must equal its size.
  // tp, pp: the tensor- and pipeline-parallel groups (null for 1); cfg.tp, cfg.pp must equal
  // their sizes.
  Trainer(TrainConfig cfg, std::string out_dir, const Comm* dp = nullptr,
          const Comm* tp = nullptr, const Comm* pp = nullptr);
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

 private:
  bool leader() const { return dp_rank_ == 0 && tp_rank_ == 0 && pp_rank_ == 0; }
  int world_rank() const { return tp_rank_ + tp_size_ * (dp_rank_ + dp_size_ * pp_rank_); }
  int world_size() const { return tp_size_ * dp_size_ * pp_size_; }
  // The layout-free full state (checkpoint) into this rank's part, and back.
  void load_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v);
  // The full (unsharded) parameters and AdamW moments: collective over dp and tp.
  void gather_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v);
  void log_progress(const StepRecord& r, double tokens_per_s, double val_loss);
  void write_trace();

  TrainConfig cfg_;
  std::string out_dir_;
  const Comm* dp_ = nullptr;
  int dp_rank_ = 0, dp_size_ = 1;
  const Comm* tp_ = nullptr;
  int tp_rank_ = 0, tp_size_ = 1;
  const Comm* pp_ = nullptr;
  int pp_rank_ = 0, pp_size_ = 1;
  StageSplit split_;                                 // pp > 1
  ModelParts parts_;                                 // this rank's parts of the model
  std::shared_ptr<const std::vector<int32_t>> train_tokens_, val_tokens_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<PlanSlicer> slicer_;               // tp > 1
  std::unique_ptr<TensorParallelHooks> tp_group_;    // tp > 1
  std::unique_ptr<ReplicaGradSync> replica_sync_;    // tp > 1
  std::vector<WeightedRange> norm_weights_;
  std::unique_ptr<Llama> model_;
  std::unique_ptr<PipelineExecutor> executor_;       // pp > 1
  std::unique_ptr<LlamaStages> stages_;              // pp > 1
  Comm tied_;  // pp > 1 with tied embeddings: the first and last stage, which both hold the embedding
  bool tied_ends_ = false;  // this rank is one of them
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ModelState> state_;
  LrSchedule schedule_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::vector<int32_t> batch_inputs_, batch_targets_;  // this rank's rows of the global batch
  std::vector<StepRecord> history_;
  int step_ = 0;
  double flops_per_token_ = 0, sgemm_peak_flops_ = 0;
  double run_seconds_ = 0;
  int steps_timed_ = 0;
};

}  // namespace ff
