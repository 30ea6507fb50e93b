#pragma once
// The training loop of one rank: data, the parallelised model (train/parallelize.h), schedule,
// checkpoints, progress. Construction does every check that can fail (config, data files,
// vocabulary, memory, checkpoint compatibility) before the first heavy allocation, so bad input
// never costs a long wait and never touches a good checkpoint. Only world rank 0 (the leader)
// writes files and prints.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/meta.h"
#include "ckpt/saver.h"
#include "comm/mesh.h"
#include "io/tokens/mixture_loader.h"
#include "io/trace.h"
#include "kernels/gemm_context.h"
#include "train/dp_mode_config.h"
#include "train/init_from.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"
#include "train/nonfinite.h"
#include "train/parallelize.h"
#include "train/progress.h"
#include "train/resume_check.h"
#include "train/run_data.h"
#include "train/train_config.h"

namespace ff {

class Trainer {
 public:
  // mesh: the ranks and their axes (null: one process); cfg.dp, cp, tp, pp must equal its
  // degrees. The mesh must outlive the trainer.
  Trainer(TrainConfig cfg, std::string out_dir, const Mesh* mesh = nullptr);
  // Trains from the current step to cfg.steps (or cfg.stop_at); writes the final checkpoint. A
  // SIGTERM or SIGINT on any rank ends it after the current step, every rank at the same step,
  // with that step's checkpoint (train/stop_signals.h); stopped() then says so.
  void run();
  bool stopped() const { return stopped_signal_ != 0; }
  // One optimizer step on the next global batch; returns its record (loss over all ranks).
  StepRecord train_step();
  double evaluate();  // mean validation loss over cfg.eval_batches micro-batches
  // Collective: every rank writes its own pieces; rank 0 then writes the manifest. With
  // ckpt_async the write continues in the background until the next save or finish_saves().
  void save();
  void finish_saves();  // collective: completes a background save (run() calls it at the end)

  const TrainConfig& config() const { return cfg_; }
  const Llama& model() const { return par_->model(); }
  // precision = fp8 only: the delayed scales of every tensor
  const Fp8Recipe* fp8_scaling() const { return par_->fp8() ? &par_->fp8()->recipe() : nullptr; }
  // What the model's GEMMs compute, and (tests) how many took which path.
  const GemmContext& gemm_context() const { return gemm_; }
  const GemmCounts& gemm_counts() const { return gemm_counts_; }
  ContextParallel* context() { return par_->context(); }  // null unless cp > 1
  // The full parameters (gathered from the ZeRO-3 shards and tensor-parallel blocks; collective;
  // for tests and inspection, never used by checkpoints).
  std::vector<float> full_params() { return par_->full_params(); }
  ModelState& state() { return par_->state(); }
  int step() const { return step_; }
  const std::vector<StepRecord>& history() const { return history_; }
  // A run started from a checkpoint's weights: what this rank read of it (tests check that a
  // sharded layout reads only its share); zeros otherwise.
  const ReadStats& start_read_stats() const { return start_read_; }
  // Training rows drawn from each folder of `data` so far (the realised mixture).
  const std::vector<uint64_t>& data_rows_per_folder() const { return loader_->rows_per_source(); }
  // The last step's routing over all ranks (null: a dense model).
  const MoeStepSummary* moe_summary() const { return par_->moe() ? &par_->moe()->last() : nullptr; }
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
  // Collective over every rank: whether `here` holds on any of them (one rank's damaged block
  // must stop all of them together, not leave the others waiting in a collective).
  bool any_rank(bool here) const;
  // Fills this rank's state from a sharded checkpoint folder, reading only what it holds; the
  // caller then calls state().after_load() (collective). Throws CheckpointDamaged on damage.
  void load_checkpoint_state(const std::string& step_dir);
  // Refuses (naming the checkpoint and the fix) a checkpoint this run cannot continue: another
  // model, another tokenizer, other data (by content), a refused config change, a step past
  // `steps` (trainer_resume.cpp); sets the lr schedule's length from the checkpoint's.
  void check_resume(const CheckpointMeta& resume, uint64_t tokenizer_checksum, const std::string& tok_path);
  // A fresh run from a checkpoint's weights (train/init_from.h): refuses, naming both files and
  // the fix, a data tokenizer other than the model's or larger than its vocabulary, and a model
  // whose shape is not the checkpoint's (trainer_init_from.cpp).
  void check_weights_start(const WeightsStart& start, const RunTokenizer& tokenizer);
  // Collective: fills this rank's parameters (only the boxes it holds) from the checkpoint, the
  // moments left zero; the MoE router bias comes along (it decides the routing the weights were
  // trained under). Every rank throws the same AgreedError when any rank finds damage.
  void load_start_weights(const CheckpointMeta& from);
  // Loads `resume` collectively; when any rank finds its data damaged, every rank goes back to
  // the previous complete checkpoint (checked like the first), and the damaged folders are set
  // aside. Returns the checkpoint loaded; throws an AgreedError when none is left.
  CheckpointMeta load_resume(CheckpointMeta resume, uint64_t tokenizer_checksum, const std::string& tok_path);
  // A step whose reduced loss or gradient norm is non-finite (or the norm 0): skipped, or located
  // and stopped with an AgreedError per on_nonfinite. Collective (trainer_nonfinite.cpp).
  StepRecord nonfinite_step(double loss, double norm, float grad_scale,
                            std::chrono::steady_clock::time_point t0);
  // For the non-finite stops' messages: where the last checkpoint is (or that there is none), and
  // what to change (grad_clip only when it is off).
  std::string last_checkpoint_text() const;
  std::string nonfinite_advice() const;
  // The periodic checkpoint of run(), deferred while the last step's loss was a spike.
  void checkpoint_if_due(const StepRecord& r, int last, bool time_due);
  // Collective, after each step, so that every rank decides alike: the stop signal any rank
  // received (the largest number, when several), else -1 when rank 0's clock says
  // ckpt_every_minutes have passed since the last save, else 0. One max-reduce of one scalar.
  int agree_on_stop_or_save() const;

  TrainConfig cfg_;
  std::string out_dir_;
  const Mesh* mesh_ = nullptr;
  int dp_rank_ = 0;  // the data coordinate: which rows of the batch this rank reads
  RunTokens tokens_;  // each folder of `data`, its weight and its train and validation streams
  std::unique_ptr<MixtureLoader> loader_;
  std::unique_ptr<LossScaler> scaler_;            // precision = fp16
  // What the run's GEMMs compute (precision, fp8 scaling, weight twins, packing), read by the
  // model at every GEMM: declared before the model, so it outlives it. The counts are for tests.
  GemmContext gemm_;
  GemmCounts gemm_counts_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<ParallelModel> par_;
  LrSchedule schedule_;
  Straggler straggler_;  // simulate_straggler: sleeps in proportion to the last step's compute
  double last_compute_seconds_ = 0;
  std::unique_ptr<CheckpointSaver> saver_;
  int saved_step_ = -1;
  std::chrono::steady_clock::time_point last_save_time_ = std::chrono::steady_clock::now();
  int stopped_signal_ = 0;  // the stop signal run() ended on (rank 0's number on every rank), 0 if none  // the step of the checkpoint this state is (resumed from or last saved)
  bool resumed_ = false;  // this run continues the run folder's checkpoint
  std::optional<WeightsStart> start_;  // a fresh run's first weights, when not the initializer's
  ReadStats start_read_;  // what loading them read on this rank
  std::vector<int32_t> batch_inputs_, batch_targets_;  // this rank's rows of the global batch
  std::vector<StepRecord> history_;
  LossSpikeWatch spikes_{0};
  SkipBudget skip_budget_;  // on_nonfinite = skip: stops a run that skips most of its steps
  bool save_deferred_ = false;  // a checkpoint was due right after a loss spike
  std::vector<ConfigChange> resume_changes_;  // accepted config changes against the checkpoint's
  ScheduleSpan schedule_span_;  // the lr schedule's length: fixed at the run's start, kept on resume
  std::vector<DataFolderRecord> data_record_;  // the data by content, saved in every checkpoint
  std::string data_note_;  // a resume whose checkpoint could only compare the data by path
  int step_ = 0;
  std::string memory_line_;  // the start-up memory estimate against what the machine has
  std::unique_ptr<ProgressReport> report_;
};

}  // namespace ff
