#pragma once
// The training loop of one process: data, model, optimizer, schedule, checkpoints, metrics.
// Construction does every check that can fail (config, data files, vocabulary, checkpoint
// compatibility) before the first heavy allocation, so bad input never costs a long wait and never
// touches a good checkpoint.
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "io/data_loader.h"
#include "io/metrics.h"
#include "model/llama.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
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
  Trainer(TrainConfig cfg, std::string out_dir);
  ~Trainer();
  // Trains from the current step to cfg.steps (or cfg.stop_at); writes the final checkpoint.
  void run();
  // One optimizer step on the next global batch; returns its record.
  StepRecord train_step();
  double evaluate();  // mean validation loss over cfg.eval_batches micro-batches
  void save();

  const TrainConfig& config() const { return cfg_; }
  const Llama& model() const { return *model_; }
  const float* params() const { return params_.data(); }
  const float* grads() const { return grads_.data(); }
  size_t num_params() const { return params_.size(); }
  int step() const { return step_; }
  const std::vector<StepRecord>& history() const { return history_; }
  bool quiet = false;  // tests silence the progress lines

 private:
  void log_progress(const StepRecord& r, double tokens_per_s, double val_loss);

  TrainConfig cfg_;
  std::string out_dir_;
  std::shared_ptr<const std::vector<int32_t>> train_tokens_, val_tokens_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<Llama> model_;
  TrackedBuffer<float> params_, grads_;
  std::unique_ptr<AdamW> optimizer_;
  LrSchedule schedule_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::vector<int32_t> batch_inputs_, batch_targets_;  // (global batch, T)
  std::vector<StepRecord> history_;
  int step_ = 0;
  double flops_per_token_ = 0, sgemm_peak_flops_ = 0;
  double run_seconds_ = 0;
  int steps_timed_ = 0;
};

}  // namespace ff
