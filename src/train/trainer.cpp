#include "train/trainer.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "io/atomic_file.h"
#include "io/token_shard.h"
#include "io/tokenizer.h"
#include "kernels/adamw.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "model/precision.h"
#include "parallel/weight_copy_of_state.h"
#include "train/zero3_gather.h"
#include "comm/comm.h"
#include "comm/flight_recorder.h"
#include "train/checkpoint_meta.h"
#include "train/resume_check.h"
#include "train/memory_check.h"
#include "plan/hardware_peak.h"
#include "train/dp_mode_config.h"
#include "parallel/grad_wire.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

std::string data_file(const TrainConfig& c, const char* name) {
  fs::path p = fs::path(c.data) / name;
  if (!fs::exists(p))
    throw std::runtime_error(fmt::format(
        "data file '{}' is missing; run `fivefold prepare --text FILE --vocab N --out {}` first "
        "(config key 'data' names that folder)",
        p.string(), c.data));
  return p.string();
}

// Every token id must index the embedding; a shard from another tokenizer would not.
void check_token_range(const std::vector<int32_t>& tokens, int vocab, const std::string& path) {
  int32_t hi = 0;
  for (int32_t t : tokens) hi = std::max(hi, t);
  if (hi >= vocab)
    throw std::runtime_error(fmt::format(
        "token shard '{}' holds token id {} but the vocabulary has {} entries; the shard was "
        "made by a different tokenizer: re-run `fivefold prepare`",
        path, hi, vocab));
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
  if (mesh_) {
    dp_rank_ = mesh_->rank(MeshGroup::dp), dp_size_ = d.dp;
    tp_rank_ = mesh_->rank(MeshGroup::tp), tp_size_ = d.tp;
    pp_rank_ = mesh_->rank(MeshGroup::pp), pp_size_ = d.pp;
    // Every rank asks for the same groups in the same order (their creation is collective).
    if (tp_size_ > 1) tp_ = &mesh_->group(MeshGroup::tp);
    if (pp_size_ > 1) pp_ = &mesh_->group(MeshGroup::pp);
  }
  validate_train_config(cfg_);
  resolve_lr_scaling(cfg_);
  straggler_ = parse_straggler(cfg_.simulate_straggler);
  if (straggler_.rank >= world_size())
    throw std::runtime_error(fmt::format("config: simulate_straggler names rank {} but the job has {} ranks",
                                         straggler_.rank, world_size()));
  omp_set_num_threads(cfg_.threads);
  fp8_ = parse_precision(cfg_.precision) == Precision::fp8;
  gemm_.input_dtype = gemm_input_dtype_of(parse_precision(cfg_.precision));
  gemm_.fp8 = fp8_;
  gemm_.packed_weights = cfg_.packed_weights;
  gemm_.wgrad_rows = cfg_.wgrad_rows;
  gemm_.counts = &gemm_counts_;
  if (parse_precision(cfg_.precision) == Precision::fp16) scaler_ = std::make_unique<LossScaler>(cfg_.loss_scale);

  // Vocabulary: the tokenizer is the truth; an explicit vocab_size must agree with it.
  const std::string tok_path = data_file(cfg_, "tokenizer.model");
  const Tokenizer tokenizer(tok_path);
  const int tok_vocab = tokenizer.vocab_size();
  if (cfg_.model.vocab_size == 0) cfg_.model.vocab_size = tok_vocab;
  if (cfg_.model.vocab_size != tok_vocab)
    throw std::runtime_error(fmt::format(
        "config vocab_size is {} but the tokenizer '{}' has {} tokens; set vocab_size = 0 (or "
        "{}), or re-run `fivefold prepare --vocab {}`",
        cfg_.model.vocab_size, tok_path, tok_vocab, tok_vocab, cfg_.model.vocab_size));
  cfg_.model.validate();
  validate_tensor_parallel(cfg_.model, cfg_.tp, cfg_.sp);
  memory_line_ = check_memory_fits(cfg_).line;  // refuses a run that cannot fit, before allocating

  // Resuming: the checkpoint's model must be this model. Checked before anything is written.
  if (leader()) fs::create_directories(out_dir_);
  // A communication waiting past collective_timeout dumps this rank's flight record and ends the job.
  if (world_size() > 1)
    start_comm_watchdog(cfg_.collective_timeout, (fs::path(out_dir_) / "flight").string());
  std::optional<CheckpointMeta> resume = read_latest_checkpoint_meta(out_dir_);
  const bool resuming = resume.has_value();
  if (resuming) check_resume(*resume, tokenizer.checksum(), tok_path);
  else refuse_only_damaged_checkpoints(out_dir_);

  const std::string train_path = data_file(cfg_, "train.bin"), val_path = data_file(cfg_, "val.bin");
  const TokenShardExpect expect{cfg_.model.vocab_size, tokenizer.checksum(), "the tokenizer " + tok_path};
  train_tokens_ = std::make_shared<const std::vector<int32_t>>(read_token_shard(train_path, expect));
  val_tokens_ = std::make_shared<const std::vector<int32_t>>(read_token_shard(val_path, expect));
  check_token_range(*train_tokens_, cfg_.model.vocab_size, train_path);
  check_token_range(*val_tokens_, cfg_.model.vocab_size, val_path);
  loader_ = std::make_unique<DataLoader>(train_tokens_, cfg_.model.seq_len, cfg_.seed);
  DataLoader(val_tokens_, cfg_.model.seq_len, cfg_.seed);  // throws now if val is too short

  if (tp_size_ > 1) {
    // The plan cuts the serial model's tensors; the model is built from this rank's blocks.
    slicer_ = std::make_unique<PlanSlicer>(cfg_.model, tp_size_, tp_rank_);
    tp_group_ = std::make_unique<TensorParallelHooks>(*tp_, cfg_.sp);
  }
  std::vector<ModelChunk> chunks;  // empty: the whole model
  parts_ = ModelParts::all(cfg_.model);
  if (pp_size_ > 1) {
    split_ = split_model(cfg_.model, pp_size_, cfg_.chunks);
    chunks = chunks_of_rank(split_, pp_rank_);
    parts_ = parts_of_rank(split_, pp_rank_);
  }
  MoeTraining::place_experts(parts_, cfg_, mesh_);
  if (!cfg_.trace.empty()) tracer_ = std::make_unique<Tracer>(world_rank());
  ModelHooks* hooks = tp_group_.get();
  if (cfg_.cp > 1) {
    // Each rank runs the model on its seq_len / cp rows; attention alone sees the whole sequence.
    cp_ = std::make_unique<ContextParallel>(*mesh_, cfg_.model.seq_len, cfg_.cp_comm, cfg_.cp_balance, tracer_.get());
    if (!hooks) hooks = (cp_hooks_ = std::make_unique<ModelHooks>()).get();
    hooks->attention_op = &cp_->attention();
  }
  model_ = std::make_unique<Llama>(cp_ ? cp_->local_model(cfg_.model) : cfg_.model, cfg_.micro_batch,
                                   cfg_.recompute, slicer_.get(), hooks,
                                   pp_size_ > 1 || parts_.expert_count >= 0 ? &parts_ : nullptr, &gemm_);
  if (cp_) model_->set_positions(cp_->layout().positions());
  if (cfg_.model.moe.enabled()) moe_ = std::make_unique<MoeTraining>(*model_, cfg_, mesh_, tracer_.get());
  if (tp_size_ > 1) tp_replicas_ = std::make_unique<TensorReplicas>(model_->layout(), *tp_, cfg_.sp);
  const auto replicas = tp_replicas_ ? tp_replicas_->ranges() : std::vector<ReplicaRange>{};
  state_ = make_model_state(model_->layout(),
                            AdamWConfig{cfg_.beta1, cfg_.beta2, cfg_.adam_eps, cfg_.weight_decay,
                                        parse_optimizer(cfg_.optimizer)},
                            DataParallelConfig{cfg_.zero, cfg_.bucket_mb, cfg_.grad_sync, dp_mode_config(cfg_),
                                               zero3_gather_dtype(cfg_),
                                               parse_grad_reduce_dtype(cfg_.grad_reduce_dtype)},
                            mesh_,
                            tracer_.get(), replicas);
  if (fp8_) {  // the scales follow each parameter tensor through whatever buffer holds it
    fp8_training_ = std::make_unique<Fp8Training>(cfg_, model_->layout(), parts_, mesh_);
    gemm_.fp8_recipe = &fp8_training_->recipe();
  }
  // 16-bit runs: the weights rounded once per step, or ZeRO-3's gathered 16-bit buffers.
  weight_copy_ = make_weight_copy(*state_, gemm_.input_dtype, fp8_, cfg_.zero == 3 && cfg_.dp * cfg_.cp > 1);
  if (weight_copy_) gemm_.twins.push_back(weight_copy_.get());
  for (const WeightTwinSource* t : state_->weight_twins()) gemm_.twins.push_back(t);
  saver_ = std::make_unique<CheckpointSaver>(out_dir_, mesh_ ? &mesh_->world() : nullptr, cfg_.keep_checkpoints,
                                             cfg_.ckpt_async);
  schedule_ = LrSchedule{cfg_.scaled_lr, cfg_.min_lr_ratio, cfg_.warmup_steps, cfg_.steps};
  spikes_ = LossSpikeWatch(cfg_.loss_spike);
  if (pp_size_ > 1) {
    executor_ = std::make_unique<PipelineExecutor>(
        PipeScheduleSpec{parse_pipe_schedule(cfg_.schedule), pp_size_, cfg_.grad_accum, cfg_.chunks}, *pp_,
        tracer_.get());
    stages_ = std::make_unique<LlamaStages>(*model_, chunks, *state_, cfg_.grad_accum);
    if (cfg_.model.tied_embeddings) {
      // The first stage looks tokens up in the embedding, the last uses it as the LM head: each
      // holds a copy, initialised alike, and their gradients are summed every step so the copies
      // stay equal (Megatron's embedding group). The norm counts each copy half.
      const bool ends = pp_rank_ == 0 || pp_rank_ == pp_size_ - 1;
      tied_ = pp_->split(ends ? 0 : 1, pp_rank_);
      tied_ends_ = ends;
      if (ends) {
        const ParamSegment emb = model_->layout().embedding_segment();
        norm_weights_.push_back({emb.offset, emb.count, 0.5});
      }
    }
  }
  if (resuming) {
    // Each rank reads only what its layout holds, whatever layout saved it.
    resume = load_resume(std::move(*resume), tokenizer.checksum(), tok_path);
    step_ = saved_step_ = resume->state.step;
    if (moe_) moe_->set_router_bias(resume->state.router_bias);
    // fp16 continues its scale trajectory; from another precision's checkpoint it starts afresh.
    if (scaler_ && resume->state.loss_scale) scaler_->restore(*resume->state.loss_scale);
    loader_->set_position(resume->state.data);
  } else {
    state_->init_parameters(cfg_.model, cfg_.seed);
  }
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
    fs::copy_file(tok_path, fs::path(out_dir_) / "tokenizer.model", fs::copy_options::overwrite_existing);
    // Always continued from step_ (0 on a fresh start): a job the supervisor restarted before its
    // first checkpoint keeps the restart rows it logged and loses only its step rows.
    metrics_ = std::make_unique<MetricsWriter>((fs::path(out_dir_) / "metrics.jsonl").string(), true, step_);
  }
  flops_per_token_ = training_flops_per_token(cfg_.model);
  if (leader()) {  // only the leader reports MFU, so only it measures (once per machine: cached)
    static const HardwarePeak peak = machine_peak();
    const int cores = cores_in_use(world_size(), ranks_on_this_machine(), cfg_.threads, peak.cores);
    peak_flops_ = peak.fma_flops_per_core * cores, gemm_ceiling_flops_ = peak.sgemm_flops_per_core * cores;
  }
}

double Trainer::sum_over(double x, std::initializer_list<MeshAxis> axes) const {
  return mesh_ ? mesh_->reduce_scalar(x, axes) : x;
}

StepRecord Trainer::train_step() {
  const auto t0 = std::chrono::steady_clock::now();
  const int T = cfg_.model.seq_len, mb = cfg_.micro_batch, G = cfg_.global_batch();
  const int local = mb * cfg_.grad_accum;
  loader_->next_batch(G, dp_rank_ * local, local, batch_inputs_.data(), batch_targets_.data());
  // A simulated slow device: slower compute delays this rank's gradients, so sleep before them.
  straggle(straggler_, world_rank(), last_compute_seconds_);
  const auto t_compute = std::chrono::steady_clock::now();
  state_->zero_grads();
  // The weights rounded once for this step's GEMMs (16-bit runs), stale again when the step ends.
  const FreshWeightCopy fresh(weight_copy_.get());
  // The loss is the mean over every token of the global batch, so each micro-batch's gradient is
  // scaled by 1/(G*T): summing over micro-batches and ranks then equals one big batch.
  float grad_scale = 1.0f / float(size_t(G) * T);
  if (scaler_) grad_scale *= scaler_->scale();  // fp16: every gradient carries the loss scale
  if (moe_) moe_->begin_step(grad_scale);
  double loss_sum = 0;
  const int32_t *inputs = batch_inputs_.data(), *targets = batch_targets_.data();
  int Tm = T;  // the rows per sequence the model runs: T, or this cp rank's T / cp
  if (cp_) {
    const auto rows = cp_->take_rows(inputs, targets, local);
    inputs = rows.inputs, targets = rows.targets, Tm = cp_->layout().local_len();
  }
  if (pp_size_ > 1) {
    // The micro-batches go through the stages as the schedule orders them; the last stage
    // computes the loss, which every stage then learns.
    TraceScope scope(tracer_.get(), "pipeline", "step");
    stages_->begin_step(inputs, targets, mb, Tm, grad_scale);
    executor_->run(*stages_);
    // (Exact: the other stages add 0.) MoE blocks add their balancing losses where they are.
    loss_sum = sum_over(stages_->loss_sum() + (moe_ ? moe_->local_loss_sum() : 0.0), {MeshAxis::pp});
  } else {
    for (int micro = 0; micro < cfg_.grad_accum; ++micro) {
      TraceScope scope(tracer_.get(), "micro-batch " + std::to_string(micro), "step");
      const size_t row0 = size_t(micro) * mb * Tm;
      const bool last = micro + 1 == cfg_.grad_accum;  // only the last micro-batch communicates
      loss_sum += model_->forward_backward(state_->params(), state_->grads(last), inputs + row0, targets + row0,
                                           mb, Tm, grad_scale);
    }
    if (moe_) loss_sum += moe_->local_loss_sum();
  }
  last_compute_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compute).count();
  {
    TraceScope scope(tracer_.get(), "wait gradients", "step");
    state_->finish_grads();
    if (tied_ends_) {
      size_t n = 0;
      float* g = state_->segment_grads(model_->layout().embedding_segment(), &n);
      tied_.all_reduce(g, n);
    }
  }
  if (after_grads_reduced) after_grads_reduced(*state_);
  // A replica that must not wait on the others (async) reports its own batch's loss.
  loss_sum = state_->lockstep() ? sum_over(loss_sum, {MeshAxis::dp, MeshAxis::cp}) : loss_sum * dp_size_;
  const double loss = loss_sum / (double(G) * T);
  // The state sums over its reduction groups; tp, then pp, one axis at a time so the additions
  // happen in the same order as always (a different order changes the last bits of the norm,
  // and through clipping the weights).
  const double norm_sq =
      sum_over(sum_over(state_->grad_square_sum(norm_weights_), {MeshAxis::tp}), {MeshAxis::pp});
  double norm = std::sqrt(norm_sq);
  // fp16: an overflow anywhere reaches every rank's norm through the reductions; the flag is
  // still summed over the whole mesh (one scalar) so that no layout can leave a rank disagreeing.
  const float loss_scale = scaler_ ? scaler_->scale() : 0.0f;
  const bool skip = scaler_ && sum_over(std::isfinite(norm_sq) ? 0.0 : 1.0,
                                        {MeshAxis::dp, MeshAxis::cp, MeshAxis::tp, MeshAxis::pp}) > 0;
  if (scaler_) {
    scaler_->update(skip);
    if (!skip) {
      state_->scale_grads(1.0f / loss_scale);  // exact: the scale is a power of 2
      norm /= loss_scale;
    }
  }
  // Loss and norm are reduced over every rank, so every rank takes this branch together. An fp16
  // overflow is not a blow-up: the scaler has skipped that step and backed off.
  if (!skip && step_is_nonfinite(loss, norm, state_->applies_gradient()))
    return nonfinite_step(loss, norm, grad_scale, t0);
  if (!skip && cfg_.grad_clip > 0 && norm > cfg_.grad_clip) state_->scale_grads(float(cfg_.grad_clip / norm));
  ++step_;  // a skipped step still consumed its batch and advances the LR schedule
  const float lr = schedule_.at(step_);
  if (!skip) {
    TraceScope scope(tracer_.get(), "optimizer", "step");
    state_->optimizer_step(lr, step_);
    if (weight_copy_) weight_copy_->invalidate();  // stale until the next step refreshes it
  }
  if (moe_) moe_->finish_step();  // after the step: the router bias moves once per optimizer step
  if (fp8_training_) fp8_training_->end_step();  // fp8: this step's amaxes (reduced) enter the histories
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  StepRecord r{step_, loss, norm, lr, seconds, loss_scale, skip};
  history_.push_back(r);
  return r;
}

double Trainer::evaluate() {
  const int T = cfg_.model.seq_len, mb = cfg_.micro_batch, G = mb * dp_size_;
  // A fresh loader at position 0 each time: every evaluation sees the same sequences. Each
  // evaluation batch is G windows split over the data-parallel ranks like a training batch, so
  // the number equals a serial run's with micro_batch G, and every rank runs the same number of
  // forwards (ZeRO-3's gathers stay in step).
  const FreshWeightCopy fresh(weight_copy_.get());
  const Fp8Training::NotRecording frozen(fp8_training_.get());
  DataLoader val(val_tokens_, T, cfg_.seed);
  std::vector<int32_t> in(size_t(mb) * T), tgt(size_t(mb) * T);
  double sum = 0;
  for (int b = 0; b < cfg_.eval_batches; ++b) {
    val.next_batch(G, dp_rank_ * mb, mb, in.data(), tgt.data());
    const int32_t *x = in.data(), *y = tgt.data();
    int Tm = T;
    if (cp_) {
      const auto rows = cp_->take_rows(x, y, mb);
      x = rows.inputs, y = rows.targets, Tm = cp_->layout().local_len();
    }
    sum += pp_size_ > 1 ? pipeline_forward_loss(stages_->chunks(), state_->params(), *pp_, x, y, mb, Tm)
                        : model_->forward_loss(state_->params(), x, y, mb, Tm);
  }
  sum = sum_over(sum, {MeshAxis::dp, MeshAxis::cp});
  return sum / (double(cfg_.eval_batches) * G * T);
}

}  // namespace ff
