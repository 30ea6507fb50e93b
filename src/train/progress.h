#pragma once
// What a run tells its user: a short start-up summary (the full config is OUT/config.toml), one
// progress line and one metrics.jsonl record per step (loss, lr, gradient norm, tokens/s, MFU over
// the FMA peak of the cores in use beside the share of the GEMM ceiling, memory by ledger category,
// MoE routing, the wall-clock time), a line when it evaluates and when it saves, and the merged
// Chrome trace. With cfg.tensorboard, each record's scalars also go to a TensorBoard event file in
// the run folder. Only the leader (world rank 0) prints and writes; the others pass through.
#include <memory>
#include <string>

#include "comm/mesh.h"
#include "io/metrics.h"
#include "io/tensorboard/event_writer.h"
#include "io/trace.h"
#include "train/moe_training.h"
#include "train/parallelize.h"
#include "train/recent_rate.h"
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
  double eval_seconds = 0;    // the evaluation after this step took (0: not evaluated)
};

class ProgressReport {
 public:
  // Leader only: measures (once per machine, cached) the peaks MFU divides by and opens
  // OUT/metrics.jsonl continued from `step` (0 on a fresh start), and a new event file.
  ProgressReport(const TrainConfig& cfg, const std::string& out_dir, const Mesh* mesh, int step);
  ~ProgressReport();
  // The lines printed before the first step: parameters, batch, layout, precision, memory
  // estimate, the run folder, and what context parallelism, precision, lr scaling, dp_mode and the
  // pipeline do.
  // Keeps `par` to report each step's exposed communication (it must outlive this report).
  void start(ParallelModel& par, const std::string& memory_line, bool quiet);
  // Said before the evaluation after `step` and before the save of its checkpoint (step_dir), each
  // flushed at once: both can take long, and a silent run looks hung.
  void evaluating(int step, bool quiet) const;
  void saving(int step, const std::string& step_dir, bool quiet) const;
  // After the save: how long training waited for it (with ckpt_async, the copy; the write goes on).
  void saved(int step, double seconds, bool async, bool quiet) const;
  // A run ended by a stop signal after saving: the "stopped" event row in metrics.jsonl (what
  // `fivefold launch` reads to tell a deliberate stop from a failure) and the message on stderr.
  void stopped(int step, int steps, const char* signal, const std::string& step_dir, int exit_code) const;
  // A step's metrics record (every step) and progress line (every log_every, the last, and with a
  // validation loss); val_loss is NaN when the step was not evaluated. The line shows tokens/s and
  // MFU over the last kRateWindow steps (the record keeps the step's own and adds those).
  // doc_tiles: under doc_mask, this rank's attention tiles visited and skipped since the start
  // (metrics.jsonl's "attention_tiles"); null otherwise.
  void step(const StepRecord& r, double val_loss, const MoeTraining* moe, bool quiet,
            const AttentionTileCounts* doc_tiles = nullptr);
  // Each rank's trace part written beside cfg.trace, merged by the leader (collective).
  void write_trace(const Tracer* tracer, bool quiet) const;

 private:
  static constexpr int kRateWindow = 20;
  bool leader() const;
  const TrainConfig& cfg_;
  std::string out_dir_;
  const Mesh* mesh_;
  const ParallelModel* par_ = nullptr;  // from start()
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<EventFileWriter> events_;  // cfg.tensorboard: the same scalars for TensorBoard
  double flops_per_token_ = 0;
  // The job's FMA peak and GEMM ceiling: per-core rates times the cores its ranks keep busy.
  double peak_flops_ = 0, gemm_ceiling_flops_ = 0;
  double run_seconds_ = 0;  // over the timed steps: the first pays for page faults and warm-up
  int steps_timed_ = 0, steps_seen_ = 0;
  RecentRate recent_{kRateWindow};  // the timed steps' tokens and seconds
};

}  // namespace ff
