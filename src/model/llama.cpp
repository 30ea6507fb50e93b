#include "model/llama.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/vocab_parallel.h"
#include "model/linear.h"

namespace ff {

namespace {
// This rank's widths, read off its (possibly sliced) layout: a tensor-parallel shard of the model
// is the same model with fewer heads, a narrower FFN and a slice of the vocabulary.
int rows_of(const ParamLayout& layout, const std::string& name) {
  return int(layout.find(name).shape[0]);
}
BlockWidths local_widths(const ParamLayout& layout, const ModelConfig& c, int layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  const int D = c.head_dim(), H = rows_of(layout, p + "self_attn.q_proj.weight") / D,
            Hkv = rows_of(layout, p + "self_attn.k_proj.weight") / D;
  return {c.dim, int64_t(H + 2 * Hkv) * D, int64_t(H) * D, H, rows_of(layout, p + "mlp.gate_proj.weight")};
}
// The vocabulary rows this rank holds: the embedding's, or (a last stage without it) the head's.
const ParamView* vocab_view(const ParamLayout& layout) {
  for (const ParamView& v : layout.views())
    if (v.name == "model.embed_tokens.weight" || v.name == "lm_head.weight") return &v;
  return nullptr;
}
std::vector<ModelChunk> whole_model(const ModelConfig& c, std::vector<ModelChunk> chunks) {
  if (!chunks.empty()) return chunks;
  return {ModelChunk{0, c.n_layers, true, true}};
}
ModelParts parts_of(const std::vector<ModelChunk>& chunks) {
  ModelParts p;
  p.embedding = p.head = false;
  for (const ModelChunk& ch : chunks) {
    for (int l = ch.first_layer; l < ch.last_layer; ++l) p.layers.push_back(l);
    p.embedding |= ch.embedding;
    p.head |= ch.head;
  }
  return p;
}
}  // namespace

Llama::Llama(const ModelConfig& config, int max_batch, Recompute policy,
             const TensorSlicer* slicer, TensorGroup* tp, std::vector<ModelChunk> chunks)
    : cfg_(config),
      chunks_(whole_model((config.validate(), config), std::move(chunks))),
      parts_(parts_of(chunks_)),
      layout_(config, slicer, &parts_),
      tp_(tp),
      w_(local_widths(layout_, config, chunks_.front().first_layer)),
      heads_(int(w_.H)),
      kv_heads_(int((w_.Q - w_.A) / (2 * config.head_dim()))),
      vocab_(vocab_view(layout_) ? int(vocab_view(layout_)->shape[0]) : 0),
      vocab_first_(vocab_view(layout_) ? int(vocab_view(layout_)->row0) : 0),
      max_batch_(max_batch),
      policy_(policy),
      slots_(chunks_.size()) {
  const int T = cfg_.seq_len, D = cfg_.head_dim();
  const size_t N = size_t(max_batch) * T, C = cfg_.dim, V = size_t(vocab_);
  const size_t A = size_t(w_.A), Q = size_t(w_.Q), F = size_t(w_.F);
  rope_cos_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_sin_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_tables(rope_cos_.data(), rope_sin_.data(), T, D, cfg_.rope_theta);
  if (layout_.head_segment().count > 0) {
    logits_.allocate(N * V, MemCategory::workspace);
    losses_.allocate(N, MemCategory::workspace);
  }
  if (tp_) {
    loss_stats_.allocate(3 * N, MemCategory::workspace);
    row_full_.allocate(N * C, MemCategory::workspace);
    if (tp_->sequence_parallel()) gathered_.allocate(N * C, MemCategory::workspace);
  }
  d_resid_.allocate(resid_rows(int(N)) * C, MemCategory::workspace);
  d_ln_.allocate(N * C, MemCategory::workspace);
  d_att_.allocate(N * A, MemCategory::workspace);
  d_qkv_.allocate(N * Q, MemCategory::workspace);
  d_gate_up_.allocate(N * 2 * F, MemCategory::workspace);
  d_h_.allocate(N * F, MemCategory::workspace);
  // The whole model's stash exists from the start, so its bytes are in the ledger at once.
  if (chunks_.size() == 1) select(0, 0);
}

Llama::~Llama() = default;

void Llama::check_shape(int B, int T) const {
  if (B < 1 || B > max_batch_ || T < 1 || T > cfg_.seq_len)
    throw std::runtime_error(fmt::format(
        "batch of {} x {} tokens does not fit the model built for {} x {} (micro_batch x seq_len)",
        B, T, max_batch_, cfg_.seq_len));
  if (tp_ && tp_->sequence_parallel() && B * T % tp_->size() != 0)
    throw std::runtime_error(fmt::format(
        "sequence parallelism splits the {} x {} tokens of a batch over {} ranks: they must "
        "divide (seq_len must be a multiple of tp)",
        B, T, tp_->size()));
}

const float* Llama::column_input(const float* x, int N) {
  return tp_ ? tp_->column_input(x, gathered_.data(), size_t(N), cfg_.dim) : x;
}

float* Llama::column_input_grad(float* d_full, int N) {
  return tp_ ? tp_->column_input_backward(d_full, size_t(N), cfg_.dim) : d_full;
}

const float* Llama::row_output_grad(const float* dy, int N) {
  return tp_ ? tp_->row_output_backward(dy, row_full_.data(), size_t(N), cfg_.dim) : dy;
}

void Llama::row_parallel_residual(float* out, const float* resid, const float* x, const float* W,
                                  int N, int in) {
  const int C = cfg_.dim;
  const size_t n = resid_rows(N) * size_t(C);
  if (!tp_) {
    // Serial: the residual add rides on the GEMM's beta = 1.
    copy_rows(out, resid, n);
    gemm(false, true, N, C, in, 1.0f, x, in, W, in, 1.0f, out, C);
    return;
  }
  // Each rank's GEMM gives a partial sum over its slice of `in`; the residual joins after the
  // reduction, once.
  matmul_xwt(row_full_.data(), x, W, N, in, C);
  const float* y = tp_->row_output(row_full_.data(), size_t(N), C);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) out[i] = resid[i] + y[i];
}

Llama::Slot& Llama::select(int chunk, int slot) {
  auto& pool = slots_[size_t(chunk)];
  if (pool.size() <= size_t(slot)) pool.resize(size_t(slot) + 1);
  auto& s = pool[size_t(slot)];
  const ModelChunk& ch = chunks_[size_t(chunk)];
  if (!s) {
    // Allocated on first use: a rank's activation memory is the peak number of micro-batches
    // in flight on each chunk, which is what a pipeline schedule decides.
    s = std::make_unique<Slot>();
    const int N = max_batch_ * cfg_.seq_len;
    s->acts = std::make_unique<Activations>(w_, ch.last_layer - ch.first_layer, N,
                                            int(resid_rows(N)), policy_, ch.head);
  }
  slot_ = s.get();
  slot_first_layer_ = ch.first_layer;
  return *s;
}

const BlockActs& Llama::acts(int layer) const { return slot_->acts->block(layer - slot_first_layer_); }

void Llama::embed(ParamSource& src, const int32_t* tokens, int N, int first_layer) {
  const ParamSegment emb = layout_.embedding_segment();
  float* x = acts(first_layer).x_in;
  const float* E = src.acquire(emb, layout_.block_segment(first_layer)).f32();
  if (!tp_) {
    embedding_forward(x, tokens, E, N, cfg_.dim);
  } else {
    // Vocab-parallel lookup: each rank fills the rows of its tokens, the group sums.
    embedding_forward_slice(row_full_.data(), tokens, E, N, cfg_.dim, vocab_first_, vocab_);
    copy_rows(x, tp_->row_output(row_full_.data(), size_t(N), cfg_.dim), resid_rows(N) * size_t(cfg_.dim));
  }
  src.release(emb);
}

Llama::HeadParams Llama::acquire_head(ParamSource& src, const ParamSegment& next) {
  const ParamSegment head = layout_.head_segment(), emb = layout_.embedding_segment();
  HeadParams h;
  h.norm = src.acquire(head, cfg_.tied_embeddings ? emb : next).f32();
  h.weight = cfg_.tied_embeddings ? src.acquire(emb, next).f32() : h.norm + cfg_.dim;
  return h;
}

void Llama::release_head(ParamSource& src) {
  if (cfg_.tied_embeddings) src.release(layout_.embedding_segment());
  src.release(layout_.head_segment());
}

void Llama::head_forward(const HeadParams& h, int first_row, int rows) {
  const int C = cfg_.dim, V = vocab_;
  const int norm_rows = tp_ ? int(resid_rows(rows)) : first_row + rows;
  rmsnorm_forward(slot_->acts->final_ln(), slot_->acts->final_rstd(), slot_->acts->final_out(), h.norm, norm_rows, C,
                  cfg_.rms_eps);
  // Under sequence parallelism the gathered rows stay in gathered_ for backward_head.
  const float* in = tp_ ? column_input(slot_->acts->final_ln(), rows) : slot_->acts->final_ln();
  matmul_xwt(logits_.data(), in + size_t(first_row) * C, h.weight, rows, C, V);
}

double Llama::loss(const int32_t* targets, int N, bool with_grad, float grad_scale) {
  float* logits = logits_.data();
  if (!tp_) {
    const int V = cfg_.vocab_size;
    return with_grad
               ? cross_entropy_forward_backward(logits, losses_.data(), targets, N, V, grad_scale)
               : cross_entropy_forward(logits, losses_.data(), targets, N, V);
  }
  // Vocab-parallel: the (N, V) logits are never gathered, only a max and two sums per row.
  float* row_max = loss_stats_.data();
  float* partials = row_max + N;
  vocab_slice_row_max(logits, row_max, N, vocab_);
  tp_->all_reduce_max(row_max, size_t(N));
  vocab_slice_partials(logits, row_max, targets, N, vocab_, vocab_first_, with_grad, partials);
  tp_->all_reduce_sum(partials, 2 * size_t(N));
  return vocab_slice_finish(logits, row_max, partials, targets, N, vocab_, vocab_first_,
                            with_grad, grad_scale, losses_.data());
}

float* Llama::backward_head(const HeadParams& h, GradSink& sink, int N) {
  const int C = cfg_.dim, V = vocab_, R = int(resid_rows(N));
  const ParamSegment head = layout_.head_segment();
  float* d_resid = d_resid_.data();  // (N, C) gradient of the residual stream
  float* d_ln = d_ln_.data();        // (N, C)
  float* norm_grad = sink.acquire(head).f32();
  // Tied: the embedding's gradient stays acquired until the lookup's backward adds to it.
  float* emb_grad = cfg_.tied_embeddings ? sink.acquire(layout_.embedding_segment()).f32() : nullptr;
  float* weight_grad = cfg_.tied_embeddings ? emb_grad : norm_grad + C;
  // logits_ holds d(loss)/d(logits) here.
  // head_forward left the full (N, C) head input where column_input put it (gathered_ under
  // sequence parallelism): nothing has touched it since.
  const float* head_in = tp_ && tp_->sequence_parallel() ? gathered_.data() : slot_->acts->final_ln();
  matmul_dyw(d_ln, logits_.data(), h.weight, N, C, V);
  accumulate_dw(weight_grad, logits_.data(), head_in, N, C, V);
  std::memset(d_resid, 0, size_t(R) * C * sizeof(float));
  rmsnorm_backward(d_resid, norm_grad, column_input_grad(d_ln, N), slot_->acts->final_out(), h.norm,
                   slot_->acts->final_rstd(), R, C);
  sink.release(head);
  return emb_grad;
}

void Llama::embedding_backward_into(float* emb_grad, const int32_t* tokens, int N) {
  if (!tp_) {
    embedding_backward(emb_grad, d_resid_.data(), tokens, N, cfg_.dim, cfg_.vocab_size);
  } else {
    const float* d_full = row_output_grad(d_resid_.data(), N);
    embedding_backward_slice(emb_grad, d_full, tokens, N, cfg_.dim, vocab_first_, vocab_);
  }
}

// ---- the whole model: the single chunk, stash 0 ----

double Llama::forward_backward(ParamSource& src, GradSink& sink, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  const MicroBatch mb{tokens, targets, B, T, grad_scale};
  const double total = chunk_forward(src, sink, 0, 0, nullptr, nullptr, mb, true);
  chunk_backward(src, sink, 0, 0, nullptr, nullptr, mb);
  return total;
}

double Llama::forward_backward(const float* params, float* grads, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  FlatParams src(params);
  FlatGrads sink(grads);
  return forward_backward(src, sink, tokens, targets, B, T, grad_scale);
}

double Llama::forward_loss(ParamSource& src, const int32_t* tokens, const int32_t* targets, int B,
                           int T) {
  FlatGrads unused(nullptr);
  return chunk_forward(src, unused, 0, 0, nullptr, nullptr, MicroBatch{tokens, targets, B, T, 0}, false);
}

double Llama::forward_loss(const float* params, const int32_t* tokens, const int32_t* targets,
                           int B, int T) {
  FlatParams src(params);
  return forward_loss(src, tokens, targets, B, T);
}

const float* Llama::forward_logits(ParamSource& src, const int32_t* tokens, int B, int T) {
  check_shape(B, T);
  select(0, 0);
  const ModelChunk& ch = chunks_.front();
  embed(src, tokens, B * T, ch.first_layer);
  blocks_forward(src, ch.first_layer, ch.last_layer, slot_->acts->final_out(), B, T, layout_.head_segment());
  head_forward(acquire_head(src, ParamSegment{}), 0, B * T);
  release_head(src);
  return logits_.data();
}

const float* Llama::forward_logits(const float* params, const int32_t* tokens, int B, int T) {
  FlatParams src(params);
  return forward_logits(src, tokens, B, T);
}

const float* Llama::forward_last_logits(const float* params, const int32_t* tokens, int T) {
  FlatParams src(params);
  check_shape(1, T);
  select(0, 0);
  const ModelChunk& ch = chunks_.front();
  embed(src, tokens, T, ch.first_layer);
  blocks_forward(src, ch.first_layer, ch.last_layer, slot_->acts->final_out(), 1, T, layout_.head_segment());
  head_forward(acquire_head(src, ParamSegment{}), T - 1, 1);
  release_head(src);
  return logits_.data();
}

}  // namespace ff
