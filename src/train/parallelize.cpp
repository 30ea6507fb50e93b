#include "train/parallelize.h"

#include <chrono>
#include <string>

#include "ckpt/full_tensors.h"
#include "comm/comm_world.h"
#include "kernels/adamw.h"
#include "train/dp_mode_config.h"

namespace ff {

namespace {
// A serial run (no comm layer) never waits on communication.
double blocked_seconds() { return comm_available() ? comm_wait_seconds() : 0.0; }

// The run's once-per-step 16-bit weight copy over every parameter run this rank holds (the full
// replicated buffer under zero 0, 1, 2, split per segment when the state has several parameter
// groups). Null when there is nothing to mirror: fp32 GEMM inputs, fp8 (quantised per call from
// fp32), or ZeRO-3 over more than one rank, whose gather buffers hold 16-bit values and are their
// own twins (parallel/zero/gather_pool.h).
std::unique_ptr<WeightCopy> make_weight_copy(ModelState& state, DType gemm_dtype, bool fp8, bool gathered) {
  if (gemm_dtype == DType::f32 || fp8 || gathered) return nullptr;
  std::vector<MirroredRange> ranges;
  for (const StateRun& r : state.checkpoint_runs(false).params) ranges.push_back({r.data, r.count});
  return std::make_unique<WeightCopy>(std::move(ranges), gemm_dtype);
}
}  // namespace

ParallelModel::ParallelModel(const TrainConfig& cfg, const Mesh* mesh, Tracer* tracer, GemmContext& gemm)
    : cfg_(cfg), mesh_(mesh), tracer_(tracer) {
  if (mesh_) {
    const MeshDegrees d = mesh_->degrees();
    tp_rank_ = mesh_->rank(MeshGroup::tp), tp_size_ = d.tp;
    pp_rank_ = mesh_->rank(MeshGroup::pp), pp_size_ = d.pp;
    // Every rank asks for the same groups in the same order (their creation is collective).
    if (tp_size_ > 1) tp_ = &mesh_->group(MeshGroup::tp);
    if (pp_size_ > 1) pp_ = &mesh_->group(MeshGroup::pp);
  }
  if (tp_size_ > 1) {
    // The plan cuts the serial model's tensors; the model is built from this rank's blocks.
    slicer_ = std::make_unique<PlanSlicer>(cfg_.model, tp_size_, tp_rank_);
    tp_hooks_ = std::make_unique<TensorParallelHooks>(*tp_, cfg_.sp);
  }
  std::vector<ModelChunk> chunks;  // empty: the whole model
  parts_ = ModelParts::all(cfg_.model);
  if (pp_size_ > 1) {
    split_ = split_model(cfg_.model, pp_size_, cfg_.chunks);
    chunks = chunks_of_rank(split_, pp_rank_);
    parts_ = parts_of_rank(split_, pp_rank_);
  }
  MoeTraining::place_experts(parts_, cfg_, mesh_);
  ModelHooks* hooks = tp_hooks_.get();
  if (cfg_.cp > 1) {
    // Each rank runs the model on its seq_len / cp rows; attention alone sees the whole sequence.
    cp_ = std::make_unique<ContextParallel>(*mesh_, cfg_.model.seq_len, cfg_.cp_comm, cfg_.cp_balance, tracer_);
    if (!hooks) hooks = (cp_hooks_ = std::make_unique<ModelHooks>()).get();
    hooks->attention_op = &cp_->attention();
  }
  model_ = std::make_unique<Llama>(cp_ ? cp_->local_model(cfg_.model) : cfg_.model, cfg_.micro_batch,
                                   cfg_.recompute, slicer_.get(), hooks,
                                   pp_size_ > 1 || parts_.expert_count >= 0 ? &parts_ : nullptr, &gemm);
  if (cp_) model_->set_positions(cp_->layout().positions());
  if (cfg_.model.moe.enabled()) moe_ = std::make_unique<MoeTraining>(*model_, cfg_, mesh_, tracer_);
  if (tp_size_ > 1) tp_replicas_ = std::make_unique<TensorReplicas>(model_->layout(), *tp_, cfg_.sp);
  const auto replicas = tp_replicas_ ? tp_replicas_->ranges() : std::vector<ReplicaRange>{};
  state_ = make_model_state(model_->layout(),
                            AdamWConfig{cfg_.beta1, cfg_.beta2, cfg_.adam_eps, cfg_.weight_decay,
                                        cfg_.optimizer},
                            DataParallelConfig{cfg_.zero, cfg_.bucket_mb, cfg_.grad_sync, dp_mode_config(cfg_),
                                               cfg_.zero3_gather, cfg_.grad_reduce_dtype},
                            mesh_, tracer_, replicas);
  if (gemm.fp8) {  // the scales follow each parameter tensor by its place in the layout
    fp8_ = std::make_unique<Fp8Training>(cfg_, model_->layout(), parts_, mesh_);
    gemm.fp8_recipe = &fp8_->recipe();
  }
  // 16-bit runs: the weights rounded once per step, or ZeRO-3's gathered 16-bit buffers.
  weight_copy_ = make_weight_copy(*state_, gemm.input_dtype, gemm.fp8, cfg_.zero == 3 && cfg_.dp * cfg_.cp > 1);
  if (weight_copy_) gemm.twins.push_back(weight_copy_.get());
  for (const WeightTwinSource* t : state_->weight_twins()) gemm.twins.push_back(t);
  if (pp_size_ > 1) {
    executor_ = std::make_unique<PipelineExecutor>(
        PipeScheduleSpec{cfg_.schedule, pp_size_, cfg_.grad_accum, cfg_.chunks}, *pp_,
        tracer_);
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
}

ParallelModel::~ParallelModel() = default;

void ParallelModel::set_document_breaks(const DocumentBreaks& breaks) {
  if (!cp_) return model_->set_document_breaks(breaks);
  cp_->set_document_breaks(breaks);
  model_->set_document_marker(cp_.get());
}

double ParallelModel::forward_backward(const int32_t* inputs, const int32_t* targets, float grad_scale,
                                       double balance_weight) {
  const int mb = cfg_.micro_batch, accum = cfg_.grad_accum;
  waited_at_step_start_ = blocked_seconds();
  if (moe_) moe_->begin_step(grad_scale, balance_weight);
  int T = cfg_.model.seq_len;  // the rows per sequence the model runs: T, or this cp rank's T / cp
  if (cp_) {
    const auto rows = cp_->take_rows(inputs, targets, mb * accum);
    inputs = rows.inputs, targets = rows.targets, T = cp_->layout().local_len();
  }
  double loss_sum = 0;
  if (pp_size_ > 1) {
    // The micro-batches go through the stages as the schedule orders them; the last stage
    // computes the loss, which every stage then learns.
    TraceScope scope(tracer_, "pipeline", "step");
    stages_->begin_step(inputs, targets, mb, T, grad_scale);
    executor_->run(*stages_);
    // (Exact: the other stages add 0.) MoE blocks add their balancing losses where they are.
    const double here = stages_->loss_sum() + (moe_ ? moe_->local_loss_sum() : 0.0);
    return mesh_->reduce_scalar(here, {MeshAxis::pp});
  }
  for (int micro = 0; micro < accum; ++micro) {
    TraceScope scope(tracer_, "micro-batch " + std::to_string(micro), "step");
    const size_t row0 = size_t(micro) * mb * T;
    const bool last = micro + 1 == accum;  // only the last micro-batch communicates
    loss_sum += model_->forward_backward(state_->params(), state_->grads(last), inputs + row0, targets + row0, mb,
                                         T, grad_scale);
  }
  if (moe_) loss_sum += moe_->local_loss_sum();
  return loss_sum;
}

void ParallelModel::finish_grads() {
  const auto t0 = std::chrono::steady_clock::now();
  exposed_.in_compute_s = blocked_seconds() - waited_at_step_start_;
  {
    TraceScope scope(tracer_, "wait gradients", "step");
    state_->finish_grads();
    if (tied_ends_) {
      size_t n = 0;
      float* g = state_->segment_grads(model_->layout().embedding_segment(), &n);
      tied_.all_reduce(g, n);
    }
  }
  exposed_.after_backward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double ParallelModel::forward_loss(const int32_t* inputs, const int32_t* targets) {
  const int mb = cfg_.micro_batch;
  int T = cfg_.model.seq_len;
  if (cp_) {
    const auto rows = cp_->take_rows(inputs, targets, mb);
    inputs = rows.inputs, targets = rows.targets, T = cp_->layout().local_len();
  }
  return pp_size_ > 1 ? pipeline_forward_loss(stages_->chunks(), state_->params(), *pp_, inputs, targets, mb, T)
                      : model_->forward_loss(state_->params(), inputs, targets, mb, T);
}

std::vector<float> ParallelModel::full_params() {
  const size_t n = model_->layout().total();
  std::vector<float> p(n), m(n), v(n);
  state_->gather_full(p.data(), m.data(), v.data());
  // This rank's experts -> every expert -> its stage's whole tensors -> the whole model.
  const ModelParts parts = MoeTraining::all_experts(parts_);
  const ParamLayout stage(cfg_.model, nullptr, &parts), sliced(cfg_.model, slicer_.get(), &parts);
  if (moe_) moe_->assemble(p, sliced);  // collective over ep
  if (slicer_) {
    std::vector<float> whole(stage.total());
    assemble_full_tensors(*tp_, cfg_.model, sliced, p.data(), whole.data(), &parts);
    p.swap(whole);
  }
  if (pp_size_ > 1) {
    std::vector<float> whole(ParamLayout(cfg_.model).total());
    assemble_stages(*pp_, cfg_.model, split_, p.data(), whole.data());
    p.swap(whole);
  }
  return p;
}

}  // namespace ff
