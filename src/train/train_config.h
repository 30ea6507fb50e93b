#pragma once
// Everything a training run is told, as one plain struct. Every field is a key of the TOML
// config file and can be overridden on the command line as --key value (with '_' spelled '-').
// The table in train_config.cpp gives each key its comment, so `fivefold train --help` and the
// saved resolved config explain themselves. A key with a closed set of values is an enum field,
// named in text by its enum's table (core/enum_table.h): set_config_key parses the text once, and
// config_to_toml prints the table's name, so the rest of the code never sees the strings.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "model/activations.h"
#include "model/model_config.h"
#include "model/precision.h"
#include "parallel/context/context_layout.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"
#include "train/nonfinite.h"

namespace ff {

struct TrainConfig {
  ModelConfig model;            // vocab_size 0 means "take it from the tokenizer in `data`"
  std::string data;             // folder written by `fivefold prepare`
  bool doc_mask = false;        // attention stays inside each document of a packed row; RoPE restarts per document
  int steps = 100;              // optimizer steps; a fresh run's LR schedule spans exactly these
  // The LR schedule's length in steps (Megatron's lr_decay_iters); past it lr stays at its floor.
  // 0: a fresh run's steps, and on resume the length the checkpoint recorded (lr_schedule.h).
  int lr_schedule_steps = 0;
  int stop_at = 0;              // stop (with a checkpoint) after this step, as if interrupted
  uint64_t seed = 1337;         // weights init and data order
  // Start from this folder's weights (an imported folder, a run or step_N folder; train/init_from.h)
  // instead of the initializer: the model's shape keys come from it. "" = initialise from seed.
  std::string init_from;
  int micro_batch = 8;          // sequences per forward/backward
  int grad_accum = 1;           // micro-batches per optimizer step
  float lr = 3e-4f;             // peak learning rate
  float min_lr_ratio = 0.1f;    // cosine decays to lr * this
  int warmup_steps = 10;        // linear warmup from 0
  float weight_decay = 0.1f;    // AdamW decoupled decay on matrices
  float beta1 = 0.9f, beta2 = 0.95f, adam_eps = 1e-8f;
  OptimizerKind optimizer = OptimizerKind::adamw;  // adamw | sgd (plain SGD, same decoupled weight decay)
  float grad_clip = 1.0f;       // global L2 norm; 0 disables
  Recompute recompute = Recompute::none;
  Precision precision = Precision::fp32;  // fp32 | bf16 | fp16 | fp8 (model/precision.h)
  LossScaleConfig loss_scale;      // fp16 only (train/loss_scaler.h)
  // ZeRO-3's gather dtype, fp32 | bf16 | fp16. fp32: the fp32 master weights, so a ZeRO-3 run
  // equals the serial run of its precision (norm weights and the embedding stay fp32). bf16 /
  // fp16: the run's 16-bit GEMM dtype (precision must be that dtype), half the bytes per gather;
  // every gathered parameter is then the 16-bit value, the norm weights and the embedding rows
  // included (FSDP's MixedPrecision(param_dtype=bf16)), so the losses leave the serial bf16 run's
  // by about bf16's rounding of those weights.
  DType zero3_gather = DType::f32;
  DType grad_reduce_dtype = DType::f32;  // fp32 | bf16: data-parallel gradient reduction (parallel/grad_wire.h)
  bool packed_weights = true;   // 16-bit runs: weights also kept packed for oneDNN (kernels/packed_weights.h)
  bool wgrad_rows = true;       // 16-bit runs: dW's rows dealt out to the threads (kernels/wgrad_rows.h)
  int threads = 0;              // OpenMP threads per rank; 0 = this machine's cores / its ranks
  int eval_every = 50;          // validation loss every N steps (and at the end); 0 = never
  int eval_batches = 4;         // micro-batches of validation data per evaluation
  int ckpt_every = 0;           // checkpoint every N steps (and always at the end); 0 = end only
  float ckpt_every_minutes = 30;  // and when this many minutes of rank 0's clock passed since the last; 0 = off
  int keep_checkpoints = 2;     // complete step_N/ checkpoints kept in the run folder
  bool ckpt_async = false;      // write checkpoints from a background thread while training goes on
  int log_every = 1;            // progress line every N steps
  // Layout over the ranks mpirun started (dp * tp * pp * cp must equal them).
  int dp = 0;                   // data-parallel replicas; 0 = every rank the other axes leave
  int tp = 1, pp = 1, cp = 1;   // tensor, pipeline, context parallel degrees
  bool sp = false;              // sequence parallelism over the tp group (norms on 1/tp of rows)
  int ep = 1;                   // expert parallel: experts split over blocks of ep ranks of dp x cp
  bool ep_overlap = false;      // ep's all-to-alls in flight while the MoE block computes what it can
  PipeSchedule schedule = PipeSchedule::one_f_one_b;  // gpipe | 1f1b | interleaved | zb-h1
  int chunks = 1;               // model chunks per pipeline rank (interleaved schedule)
  CpComm cp_comm = CpComm::ring;              // context parallel attention: ring | allgather | a2a
  CpBalance cp_balance = CpBalance::headtail;  // chunks per cp rank: headtail (balanced) | contiguous
  int zero = 0;                 // ZeRO stage 0..3 over the data-parallel group
  float bucket_mb = 4.0f;       // DDP gradient bucket size
  GradSync grad_sync = GradSync::overlap;  // DDP: overlap | after_backward | none (benchmarks)
  std::string trace;            // write a Chrome trace (Perfetto) of the run to this file
  bool tensorboard = true;      // TensorBoard event file in the run folder, beside metrics.jsonl
  NonfiniteAction on_nonfinite = NonfiniteAction::stop;  // a non-finite (or vanished) gradient norm: stop | skip
  float loss_spike = 5.0f;      // warn when the loss exceeds this x its recent median (0 = off)
  float collective_timeout = 300.0f;  // seconds a communication may wait before the job is ended
  // Asynchronous data parallelism, local SGD, DiLoCo (parallel/data/dp_mode.h) and lr scaling
  // (train/dp_mode_config.h).
  DpMode dp_mode = DpMode::sync;  // sync | local_sgd | diloco | async
  int sync_every = 1;           // H: local steps between averagings (local_sgd, diloco)
  float outer_lr = 0.7f, outer_momentum = 0.9f;  // diloco's outer Nesterov step
  DType diloco_pseudo_grad_dtype = DType::f32;  // fp32 | bf16
  int max_staleness = 0;        // async: a gradient is applied this many steps late
  std::string simulate_straggler;  // "RANK:FACTOR": that rank sleeps (FACTOR-1) x its compute
  LrScaling lr_scaling = LrScaling::none;  // none | linear | sqrt in global batch / lr_reference_batch
  int lr_reference_batch = 0;   // sequences per step that `lr` was tuned for
  float scaled_lr = 0;          // resolved at start: lr x the scaling factor (the schedule's peak)

  // Sequences per optimizer step over all data-parallel ranks.
  int global_batch() const { return micro_batch * grad_accum * (dp > 0 ? dp : 1); }
};

struct ConfigKey {
  const char* name;
  std::string help;  // an enum key's lists its values: "pipeline schedule: gpipe | 1f1b | interleaved | zb-h1"
};
// Every key with its one-line explanation, in file order.
const std::vector<ConfigKey>& config_keys();

// Where the user set each key, by its canonical name: "--dim" or "configs/x.toml:4".
using KeySources = std::map<std::string, std::string>;
// Reads a TOML file (flat keys) and applies overrides in order. Unknown keys, wrong types and
// malformed values (an enum key's name its table lacks) throw naming the key, the source (the
// file and line, or the command line) and the fix. set_by (optional) receives where each key
// the file or the overrides set came from.
TrainConfig load_train_config(const std::string& toml_path,
                              const std::vector<std::pair<std::string, std::string>>& overrides,
                              KeySources* set_by = nullptr);
// Sets one key from text; throws for unknown keys (suggesting the nearest) and bad values.
void set_config_key(TrainConfig& c, const std::string& key, const std::string& value,
                    const std::string& source);
std::string config_to_toml(const TrainConfig& c);
// What a valid config may still get wrong, one sentence each naming the key, its value and the
// usual range: an init_std that starts the loss in the hundreds, a warmup longer than the run.
std::vector<std::string> config_warnings(const TrainConfig& c);
// One key's value as config_to_toml writes it ("576", "1e-05", "\"llama3\"", "true").
std::string config_value_text(const TrainConfig& c, const std::string& key);
// Whether the run that saved this resolved config (a checkpoint's) trained with doc_mask; false
// for a config without the key (runs before it existed) or an empty one.
bool saved_doc_mask(const std::string& config_toml);
// Cheap checks that must pass before any data is read or memory allocated: each key's range and
// every check across keys, those of the features included (context parallelism, the pipeline
// schedule, ZeRO-3's gather dtype, the data-parallel modes, the model's shape, MoE's layout).
// The one entry point: nothing else validates a TrainConfig before a run.
void validate_train_config(const TrainConfig& c);
// The most OpenMP threads a process may ask for: 4 per core of this machine. Beyond that the
// threads time-slice and OpenMP's barriers spin against each other (threads = 1000 ran 12x slower).
int max_useful_threads();
// Ranks the launcher started on this machine (mpirun's OMPI_COMM_WORLD_LOCAL_SIZE, else srun's
// count, train/slurm_tasks.h; 1 otherwise): they share its cores and its memory.
int ranks_on_this_machine();
// Fills dp = 0 with the ranks tp * pp * cp leave (the Mesh checks an explicit layout), and
// threads = 0 with the cores per rank on this machine (the launcher's local rank count,
// ranks_on_this_machine).
void resolve_layout(TrainConfig& c, int world_size);

}  // namespace ff
