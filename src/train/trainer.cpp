#include "train/trainer.h"

#include <optional>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "comm/flight_recorder.h"
#include "io/atomic_file.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokenizer/tokenizer_files.h"
#include "kernels/cross_entropy.h"
#include "model/precision.h"
#include "train/fault_injection.h"
#include "train/memory_check.h"
#include "train/stop_signals.h"

namespace ff {

namespace fs = std::filesystem;

namespace {
// An evaluation whose batches hold no loss target has no mean to report.
void require_validation_targets(uint64_t targets, const TrainConfig& c, int G) {
  if (targets == 0)
    throw std::runtime_error(fmt::format(
        "evaluation: the loss mask of the validation data in '{}' leaves out every target of the {} "
        "evaluation batches ({} sequences of {} tokens each); give the validation examples completion tokens, "
        "or raise eval_batches",
        c.data, c.eval_batches, G, c.model.seq_len));
}

// Whether dir holds a tokenizer file with this checksum (the same bytes).
bool holds_tokenizer(const std::string& dir, uint64_t checksum) {
  try {
    return tokenizer_file_checksum(tokenizer_file_in(dir)) == checksum;
  } catch (const std::exception&) {
    return false;  // none, or both kinds
  }
}
}  // namespace

Trainer::Trainer(TrainConfig cfg, std::string out_dir, const Mesh* mesh)
    : cfg_(std::move(cfg)), out_dir_(std::move(out_dir)), mesh_(mesh) {
  const MeshDegrees d = mesh_ ? mesh_->degrees() : MeshDegrees{};
  if (mesh_) out_dir_ = leader_run_dir(mesh_->world(), out_dir_);  // every rank writes into it
  resolve_layout(cfg_, world_size());
  if (cfg_.dp != d.dp || cfg_.cp != d.cp || cfg_.tp != d.tp || cfg_.pp != d.pp || cfg_.ep != d.ep)
    throw std::runtime_error(fmt::format(
        "config dp = {}, cp = {}, tp = {}, pp = {}, ep = {} but the mesh has dp = {}, cp = {}, tp = {}, pp = {}, "
        "ep = {}; build the mesh from the config's degrees",
        cfg_.dp, cfg_.cp, cfg_.tp, cfg_.pp, cfg_.ep, d.dp, d.cp, d.tp, d.pp, d.ep));
  if (mesh_) dp_rank_ = mesh_->rank(MeshGroup::dp);
  validate_train_config(cfg_);
  resolve_lr_scaling(cfg_);
  straggler_ = parse_straggler(cfg_.simulate_straggler);
  if (straggler_.rank >= world_size())
    throw std::runtime_error(fmt::format("config: simulate_straggler names rank {} but the job has {} ranks",
                                         straggler_.rank, world_size()));
  omp_set_num_threads(cfg_.threads);
  gemm_.input_dtype = gemm_input_dtype_of(cfg_.precision);
  gemm_.fp8 = cfg_.precision == Precision::fp8;
  gemm_.packed_weights = cfg_.packed_weights;
  gemm_.wgrad_rows = cfg_.wgrad_rows;
  gemm_.counts = &gemm_counts_;
  if (cfg_.precision == Precision::fp16) scaler_ = std::make_unique<LossScaler>(cfg_.loss_scale);

  const RunTokenizer tokenizer = open_run_tokenizer(cfg_);
  // The run folder's newest complete checkpoint: resumed when full; a weights-only one (an
  // import), or else init_from, gives the first weights of a fresh run (train/init_from.h).
  std::optional<CheckpointMeta> resume = read_latest_checkpoint_meta(out_dir_);
  if (std::optional<WeightsStart> start = find_weights_start(cfg_, resume, out_dir_)) {
    start_ = std::move(*start);
    resume.reset();
    check_weights_start(*start_, tokenizer);
  } else {
    // Vocabulary: the tokenizer is the truth; an explicit vocab_size must agree with it.
    if (cfg_.model.vocab_size == 0) cfg_.model.vocab_size = tokenizer.vocab_size;
    if (cfg_.model.vocab_size != tokenizer.vocab_size)
      throw std::runtime_error(fmt::format(
          "config vocab_size is {} but the tokenizer '{}' has {} tokens; set vocab_size = 0 (or "
          "{}), or re-run `fivefold prepare --vocab {}`",
          cfg_.model.vocab_size, tokenizer.path, tokenizer.vocab_size, tokenizer.vocab_size, cfg_.model.vocab_size));
  }
  validate_train_config(cfg_);  // again: the shape checks now see the tokenizer's vocab_size
  if (cfg_.doc_mask && tokenizer.bos_id < 0 && tokenizer.eos_id < 0)
    throw std::runtime_error(fmt::format("config: doc_mask = true needs the tokenizer '{}' to have a BOS or EOS "
                                         "token, which mark where documents start; it has neither: set "
                                         "doc_mask = false", tokenizer.path));
  memory_line_ = check_memory_fits(cfg_).line;  // refuses a run that cannot fit, before allocating

  // Resuming: the checkpoint's model must be this model. Checked before anything is written.
  if (leader()) fs::create_directories(out_dir_);
  // A communication waiting past collective_timeout dumps this rank's flight record and ends the job.
  if (world_size() > 1) start_comm_watchdog(cfg_.collective_timeout, (fs::path(out_dir_) / "flight").string());
  data_record_ = record_run_data(cfg_.data);
  schedule_span_ = schedule_span(cfg_.lr_schedule_steps, cfg_.steps, std::nullopt, 0);
  if (resume) check_resume(*resume, tokenizer.checksum, tokenizer.path);
  else if (!start_) refuse_only_damaged_checkpoints(out_dir_);

  tokens_ = read_run_tokens(cfg_, tokenizer);
  loader_ = std::make_unique<MixtureLoader>(tokens_.train, cfg_.model.seq_len, cfg_.seed);
  if (cfg_.eval_every > 0) {  // the validation data is read only to evaluate: checked now if it will be
    std::optional<MixtureLoader> opened;
    try {
      opened.emplace(tokens_.val, cfg_.model.seq_len, cfg_.seed);  // a split too short to fill a window throws
    } catch (const std::runtime_error& e) {
      std::string files;
      for (const std::string& f : tokens_.val_files) files += (files.empty() ? "" : ", ") + f;
      throw std::runtime_error(fmt::format(
          "the validation data {} cannot be evaluated ({}): evaluation every eval_every = {} steps reads it; "
          "prepare the data again with more validation documents (--val-docs N or --val-fraction F), or set "
          "eval_every = 0 to train without validation", files, e.what(),
          cfg_.eval_every));
    }
    MixtureLoader& val = *opened;
    const int G = cfg_.micro_batch * cfg_.dp;
    uint64_t val_targets = 0;
    for (int b = 0; b < cfg_.eval_batches; ++b) val_targets += val.next_batch(G, 0, 0, nullptr, nullptr);
    require_validation_targets(val_targets, cfg_, G);
  }

  if (!cfg_.trace.empty()) tracer_ = std::make_unique<Tracer>(world_rank());
  par_ = std::make_unique<ParallelModel>(cfg_, mesh_, tracer_.get(), gemm_);
  if (cfg_.doc_mask) par_->set_document_breaks({tokenizer.bos_id, tokenizer.eos_id});
  saver_ = std::make_unique<CheckpointSaver>(out_dir_, mesh_ ? &mesh_->world() : nullptr, cfg_.keep_checkpoints,
                                             cfg_.ckpt_async);
  spikes_ = LossSpikeWatch(cfg_.loss_spike);
  if (resume) {
    // Each rank reads only what its layout holds, whatever layout saved it.
    resume = load_resume(std::move(*resume), tokenizer.checksum, tokenizer.path);
    step_ = saved_step_ = resume->state.step;
    resumed_ = true;
    if (par_->moe()) par_->moe()->set_router_bias(resume->state.router_bias);
    // fp16 continues its scale trajectory; from another precision's checkpoint it starts afresh.
    if (scaler_ && resume->state.loss_scale) scaler_->restore(*resume->state.loss_scale);
    loader_->set_position(resume->state.data);
  } else if (start_) {
    load_start_weights(start_->checkpoint);  // step 0, data position 0, fresh optimizer and loss scale
  } else {
    par_->state().init_parameters(cfg_.model, cfg_.seed);
  }
  // After the resume: a fallback to an older checkpoint takes that checkpoint's length.
  schedule_ = LrSchedule{cfg_.scaled_lr, cfg_.min_lr_ratio, cfg_.warmup_steps, schedule_span_.steps};
  // This rank's rows of each global batch: a contiguous slice, so the ranks together see exactly
  // the sequences a serial run with the same global batch sees.
  const size_t rows = size_t(cfg_.micro_batch) * cfg_.grad_accum * cfg_.model.seq_len;
  batch_inputs_.resize(rows);
  batch_targets_.resize(rows);

  if (leader()) {
    if (!resume_changes_.empty())  // the config the earlier steps ran under stays beside the new one
      write_file_atomic((fs::path(out_dir_) / fmt::format("config.step_{}.toml", step_)).string(),
                        resume->state.config_toml);
    write_file_atomic((fs::path(out_dir_) / "config.toml").string(), config_to_toml(cfg_));
    // One tokenizer file in the run folder, so sample/eval/export cannot pick a stale one; its
    // Hugging Face side files come along for export to hand back. A run started from weights
    // takes the model's own files (the checksum check made them the data's tokenizer), so export
    // hands back exactly what was imported; a run folder already holding this tokenizer keeps its
    // files (a resumed fine-tune keeps the model's, not the data folder's side files).
    if (start_ && !start_->tokenizer_path.empty())
      copy_tokenizer_files(start_->tokenizer_path, out_dir_, tokenizer.file_name);
    else if (!(resume && holds_tokenizer(out_dir_, tokenizer.checksum)))
      copy_tokenizer_files(tokenizer.path, out_dir_, tokenizer.file_name);
  }
  report_ = std::make_unique<ProgressReport>(cfg_, out_dir_, mesh_, step_);
}

double Trainer::sum_over(double x, std::initializer_list<MeshAxis> axes) const {
  return mesh_ ? mesh_->reduce_scalar(x, axes) : x;
}

bool Trainer::any_rank(bool here) const {
  const double x = here ? 1 : 0;
  return (mesh_ ? mesh_->reduce_scalar(x, {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp}, ReduceOp::max)
                : x) > 0;
}

StepRecord Trainer::train_step() {
  const auto t0 = std::chrono::steady_clock::now();
  const int T = cfg_.model.seq_len, G = cfg_.global_batch();
  const int local = cfg_.micro_batch * cfg_.grad_accum;
  // Loss targets in the whole global batch (all G rows, every rank the same count): G*T unless
  // the data's loss mask leaves some targets out.
  const uint64_t targets =
      loader_->next_batch(G, dp_rank_ * local, local, batch_inputs_.data(), batch_targets_.data());
  if (targets == 0)
    throw std::runtime_error(fmt::format(
        "step {}: the loss mask of the training data in '{}' leaves out every target of the global batch "
        "({} sequences of {} tokens), so the step has no loss to average; give every example completion "
        "tokens (a non-empty completion field), or raise micro_batch or grad_accum so a batch spans more "
        "examples",
        step_ + 1, cfg_.data, G, T));
  // A simulated slow device: slower compute delays this rank's gradients, so sleep before them.
  straggle(straggler_, world_rank(), last_compute_seconds_);
  const auto t_compute = std::chrono::steady_clock::now();
  ModelState& state = par_->state();
  state.zero_grads();
  // The weights rounded once for this step's GEMMs (16-bit runs), stale again when the step ends.
  const FreshWeightCopy fresh(par_->weight_copy());
  // The loss is the mean over the loss targets of the global batch (every token without a loss
  // mask), so each micro-batch's gradient is scaled by 1/targets: summing over micro-batches and
  // ranks then equals one big batch, however unevenly the mask falls on the ranks' rows.
  float grad_scale = 1.0f / float(targets);
  if (scaler_) grad_scale *= scaler_->scale();  // fp16: every gradient carries the loss scale
  // MoE: the balancing losses stay a mean over every token of the batch, loss target or not.
  const double balance_weight = double(targets) / (double(G) * T);
  double loss_sum = par_->forward_backward(batch_inputs_.data(), batch_targets_.data(), grad_scale, balance_weight);
  last_compute_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compute).count();
  par_->finish_grads();
  if (after_grads_reduced) after_grads_reduced(state);
  if (state.lockstep()) {
    loss_sum = sum_over(loss_sum, {MeshAxis::dp, MeshAxis::cp});
  } else {
    // A replica that must not wait on the others (async) reports its own batch's loss: its sum
    // times the global batch's targets over its own (dp without a loss mask).
    const auto own = std::count_if(batch_targets_.begin(), batch_targets_.end(),
                                   [](int32_t t) { return t != kIgnoredTarget; });
    loss_sum *= own > 0 ? double(targets) / double(own) : double(cfg_.dp);
  }
  const double loss = loss_sum / double(targets);
  // The state sums over its reduction groups; tp, then pp, one axis at a time so the additions
  // happen in the same order as always (a different order changes the last bits of the norm,
  // and through clipping the weights).
  const double norm_sq = sum_over(sum_over(par_->grad_square_sum(), {MeshAxis::tp}), {MeshAxis::pp});
  double norm = std::sqrt(norm_sq);
  // fp16: an overflow anywhere reaches every rank's norm through the reductions; the flag is
  // still summed over the whole mesh (one scalar) so that no layout can leave a rank disagreeing.
  const float loss_scale = scaler_ ? scaler_->scale() : 0.0f;
  const bool skip = scaler_ && sum_over(std::isfinite(norm_sq) ? 0.0 : 1.0,
                                        {MeshAxis::dp, MeshAxis::cp, MeshAxis::tp, MeshAxis::pp}) > 0;
  if (scaler_) {
    scaler_->update(skip);
    if (!skip) {
      state.scale_grads(1.0f / loss_scale);  // exact: the scale is a power of 2
      norm /= loss_scale;
    }
  }
  // Loss and norm are reduced over every rank, so every rank takes this branch together. An fp16
  // overflow is not a blow-up: the scaler has skipped that step and backed off.
  if (!skip && step_is_nonfinite(loss, norm, state.applies_gradient()))
    return nonfinite_step(loss, norm, grad_scale, t0);
  if (!skip && cfg_.grad_clip > 0 && norm > cfg_.grad_clip) state.scale_grads(float(cfg_.grad_clip / norm));
  ++step_;  // a skipped step still consumed its batch and advances the LR schedule
  const float lr = schedule_.at(step_);
  if (!skip) {
    TraceScope scope(tracer_.get(), "optimizer", "step");
    state.optimizer_step(lr, step_);
    if (par_->weight_copy()) par_->weight_copy()->invalidate();  // stale until the next step refreshes it
  }
  if (par_->moe()) par_->moe()->finish_step();  // after the step: the router bias moves once per optimizer step
  if (par_->fp8()) par_->fp8()->end_step();  // fp8: this step's amaxes (reduced) enter the histories
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  StepRecord r{step_, loss, norm, lr, seconds, loss_scale, skip};
  history_.push_back(r);
  return r;
}

double Trainer::evaluate() {
  const int T = cfg_.model.seq_len, mb = cfg_.micro_batch, G = mb * cfg_.dp;
  // A fresh loader at position 0 each time: every evaluation sees the same sequences, a mixture's
  // drawn from the folders' validation splits by the training weights (so val_loss estimates the
  // loss of the mixture being trained). Each
  // evaluation batch is G windows split over the data-parallel ranks like a training batch, so
  // the number equals a serial run's with micro_batch G, and every rank runs the same number of
  // forwards (ZeRO-3's gathers stay in step).
  const FreshWeightCopy fresh(par_->weight_copy());
  const Fp8Training::NotRecording frozen(par_->fp8());
  MixtureLoader val(tokens_.val, T, cfg_.seed);
  std::vector<int32_t> in(size_t(mb) * T), tgt(size_t(mb) * T);
  double sum = 0;
  uint64_t targets = 0;  // the loss targets of every evaluation batch, each counted whole on every rank
  for (int b = 0; b < cfg_.eval_batches; ++b) {
    targets += val.next_batch(G, dp_rank_ * mb, mb, in.data(), tgt.data());
    sum += par_->forward_loss(in.data(), tgt.data());
  }
  require_validation_targets(targets, cfg_, G);
  sum = sum_over(sum, {MeshAxis::dp, MeshAxis::cp});
  return sum / double(targets);
}

int Trainer::agree_on_stop_or_save() const {
  // Encoded so that a max over the ranks keeps a stop over a timed save: 1 + a signal number
  // (>= 2) beats rank 0's "time is up" (1), which beats nothing (0).
  double here = 0;
  if (StopSignals::requested()) {
    here = 1 + StopSignals::first_signal();
  } else if (leader() && cfg_.ckpt_every_minutes > 0) {
    const double minutes =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_save_time_).count() / 60.0;
    if (minutes >= double(cfg_.ckpt_every_minutes)) here = 1;
  }
  const double all = mesh_ ? mesh_->reduce_scalar(here, {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp},
                                                  ReduceOp::max)
                           : here;
  return all >= 2 ? int(all) - 1 : -int(all);
}

void Trainer::run() {
  const int last = cfg_.stop_at > 0 ? cfg_.stop_at : cfg_.steps;
  const StopSignals signals;  // from here on SIGTERM / SIGINT end the run after a step, saved
  report_->start(*par_, memory_line_, quiet);
  if (const std::string plan = describe_data_plan(tokens_, *loader_); !plan.empty() && leader() && !quiet)
    std::printf("%s\n", plan.c_str());
  if (step_ > 0 && leader() && !quiet)
    std::printf("resuming from step %d of %d (%s)\n", step_, cfg_.steps, out_dir_.c_str());
  if (leader() && !quiet) {
    if (start_)
      std::printf("starting from the weights of %s (step %d of the run that saved them): step 0, fresh optimizer\n",
                  start_->checkpoint.dir.c_str(), start_->checkpoint.state.step);
    else if (!cfg_.init_from.empty() && resumed_)
      std::printf("init_from '%s' is ignored: %s already holds a checkpoint, which this run resumes (init_from "
                  "sets the weights of a fresh run only)\n",
                  cfg_.init_from.c_str(), out_dir_.c_str());
    else if (!resumed_)
      std::printf("starting fresh: parameters initialised from seed %llu, step 0\n", (unsigned long long)cfg_.seed);
  }
  if (leader() && !quiet)
    for (const std::string* note : {&data_note_, &schedule_span_.note})
      if (!note->empty()) std::printf("%s\n", note->c_str());
  if (!resume_changes_.empty() && leader() && !quiet)
    std::printf("config changed since the checkpoint, accepted as deliberate: %s (the old config is kept as "
                "config.step_%d.toml)\n", describe_changes(resume_changes_).c_str(), step_);
  while (step_ < last) {
    inject_planned_fault(world_rank(), step_ + 1);  // tests of the supervisor and the watchdog only
    StepRecord r = train_step();
    if (!r.skipped) history_.back().spike_median = r.spike_median = spikes_.observe(r.loss);
    if (!r.skipped) skip_budget_.record(false);  // a healthy step; skipped ones count in nonfinite_step
    double val = NAN;
    if (cfg_.eval_every > 0 && (step_ % cfg_.eval_every == 0 || step_ == last)) {
      report_->evaluating(step_, quiet);
      const auto t0 = std::chrono::steady_clock::now();
      val = evaluate();
      r.eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    report_->step(r, val, par_->moe(), quiet, cfg_.doc_mask ? &par_->model().document_tiles() : nullptr);
    // Async data parallelism (max_staleness s > 0) lets replicas run up to s steps apart; a vote
    // every step would hold them together, so they vote every s + 1 steps (a stop is then at most
    // s steps late). Every other mode steps in lockstep anyway.
    const int vote_every = par_->state().lockstep() ? 1 : cfg_.max_staleness + 1;
    const int agreed = step_ % vote_every == 0 ? agree_on_stop_or_save() : 0;
    if (agreed > 0) {
      stopped_signal_ = agreed;
      break;  // the checkpoint below is this step's
    }
    checkpoint_if_due(r, last, agreed < 0);
  }
  // Every rank asks (a group's first request is collective); the dense group exists by now.
  const uint64_t dp_bytes = cfg_.dp > 1 ? mesh_->group(MeshGroup::dp_cp).stats().total_bytes() : 0;
  if (leader() && !quiet && cfg_.dp > 1)
    std::printf("data-parallel bytes sent per rank: %llu\n", (unsigned long long)dp_bytes);
  if (const std::string realised = describe_data_realised(tokens_, *loader_); !realised.empty() && leader() && !quiet)
    std::printf("%s\n", realised.c_str());
  save();
  finish_saves();
  report_->write_trace(tracer_.get(), quiet);
  if (leader() && !quiet) std::printf("%s", MemoryLedger::instance().table().c_str());
  if (stopped()) {
    report_->stopped(step_, cfg_.steps, stop_signal_name(stopped_signal_),
                     (std::filesystem::path(out_dir_) / ("step_" + std::to_string(step_))).string(), kStoppedExitCode);
    // mpirun ends the whole job as soon as one rank exits with a nonzero status: no rank leaves
    // before rank 0 has recorded the stop.
    if (mesh_) mesh_->reduce_scalar(0.0, {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp}, ReduceOp::max);
  }
}

}  // namespace ff
