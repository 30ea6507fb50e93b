#include "model/llama.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/flash_attention.h"
#include "kernels/gemm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "kernels/vocab_parallel.h"

namespace ff {

namespace {
// y(N,out) = x(N,in) W^T, overwriting y.
void matmul_xwt(float* y, const float* x, const float* W, int N, int in, int out) {
  gemm(false, true, N, out, in, 1.0f, x, in, W, in, 0.0f, y, out);
}
// dx(N,in) = dy(N,out) W, overwriting dx.
void matmul_dyw(float* dx, const float* dy, const float* W, int N, int in, int out) {
  gemm(false, false, N, in, out, 1.0f, dy, out, W, in, 0.0f, dx, in);
}
// dW(out,in) += dy^T x (linear_backward picks the faster operand order for tall weights)
void accumulate_dw(float* dW, const float* dy, const float* x, int N, int in, int out) {
  linear_backward(nullptr, dW, dy, x, nullptr, N, in, out);
}
void copy_rows(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

// This rank's widths, read off its (possibly sliced) layout: a tensor-parallel shard of the model
// is the same model with fewer heads, a narrower FFN and a slice of the vocabulary.
int rows_of(const ParamLayout& layout, const std::string& name) {
  return int(layout.find(name).shape[0]);
}
BlockWidths local_widths(const ParamLayout& layout, const ModelConfig& c) {
  const int D = c.head_dim(), H = rows_of(layout, "model.layers.0.self_attn.q_proj.weight") / D,
            Hkv = rows_of(layout, "model.layers.0.self_attn.k_proj.weight") / D;
  return {c.dim, int64_t(H + 2 * Hkv) * D, int64_t(H) * D, H,
          rows_of(layout, "model.layers.0.mlp.gate_proj.weight")};
}
}  // namespace

Llama::Llama(const ModelConfig& config, int max_batch, Recompute policy,
             const TensorSlicer* slicer, TensorGroup* tp)
    : cfg_(config),
      layout_((config.validate(), config), slicer),
      tp_(tp),
      w_(local_widths(layout_, config)),
      heads_(int(w_.H)),
      kv_heads_(int((w_.Q - w_.A) / (2 * config.head_dim()))),
      vocab_(rows_of(layout_, "model.embed_tokens.weight")),
      vocab_first_(int(layout_.find("model.embed_tokens.weight").row0)),
      max_batch_(max_batch),
      acts_(w_, config.n_layers, max_batch * config.seq_len,
            int(resid_rows(max_batch * config.seq_len)), policy) {
  const int T = cfg_.seq_len, D = cfg_.head_dim();
  const size_t N = size_t(max_batch) * T, C = cfg_.dim, V = size_t(vocab_);
  const size_t A = size_t(w_.A), Q = size_t(w_.Q), F = size_t(w_.F);
  rope_cos_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_sin_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_tables(rope_cos_.data(), rope_sin_.data(), T, D, cfg_.rope_theta);
  logits_.allocate(N * V, MemCategory::workspace);
  losses_.allocate(N, MemCategory::workspace);
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
}

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

namespace {
const ParamSegment kNoSegment{};
}

void Llama::block_forward(const float* P, int l, float* out, int B, int T) {
  const BlockActs& a = acts_.block(l);
  const BlockOffsets& o = layout_.block_offsets();
  const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, H = heads_, Hkv = kv_heads_,
            D = cfg_.head_dim(), Q = int(w_.Q), A = int(w_.A), F = int(w_.F);
  rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, R, C, cfg_.rms_eps);
  matmul_xwt(a.qkv, column_input(a.ln1, N), P + o.qkv, N, C, Q);    // (N, Q)
  rope_forward(a.qkv, rope_cos_.data(), rope_sin_.data(), B, T, H, D, Q);
  rope_forward(a.qkv + A, rope_cos_.data(), rope_sin_.data(), B, T, Hkv, D, Q);
  AttentionShape s{B, T, H, Hkv, D, Q, Q};
  attention_forward(a.att, a.lse, a.qkv, a.qkv + A, a.qkv + A + Hkv * D, s);  // (N, A)
  row_parallel_residual(a.mid, a.x_in, a.att, P + o.o, N, A);        // (R, C)
  rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, R, C, cfg_.rms_eps);
  matmul_xwt(a.gate_up, column_input(a.ln2, N), P + o.gate_up, N, C, 2 * F);  // (N, 2F)
  swiglu_forward(a.h, a.gate_up, N, F);                              // (N, F)
  if (out) row_parallel_residual(out, a.mid, a.h, P + o.down, N, F);  // (R, C)
}

void Llama::forward_blocks(ParamSource& src, const int32_t* tokens, int B, int T) {
  check_shape(B, T);
  const int N = B * T, L = cfg_.n_layers;
  const ParamSegment emb = layout_.embedding_segment();
  const float* E = src.acquire(emb, Pass::forward, layout_.block_segment(0));
  if (!tp_) {
    embedding_forward(acts_.block(0).x_in, tokens, E, N, cfg_.dim);
  } else {
    // Vocab-parallel lookup: each rank fills the rows of its tokens, the group sums.
    embedding_forward_slice(row_full_.data(), tokens, E, N, cfg_.dim, vocab_first_, vocab_);
    copy_rows(acts_.block(0).x_in, tp_->row_output(row_full_.data(), size_t(N), cfg_.dim),
              resid_rows(N) * size_t(cfg_.dim));
  }
  src.release(emb, Pass::forward);
  for (int l = 0; l < L; ++l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l + 1 < L ? layout_.block_segment(l + 1) : layout_.head_segment();
    float* out = l + 1 < L ? acts_.block(l + 1).x_in : acts_.final_out();
    block_forward(src.acquire(seg, Pass::forward, next), l, out, B, T);
    src.release(seg, Pass::forward);
  }
}

Llama::HeadParams Llama::acquire_head(ParamSource& src, Pass pass) {
  const ParamSegment head = layout_.head_segment(), emb = layout_.embedding_segment();
  // After the head come the blocks in reverse (backward) or nothing (forward).
  const ParamSegment next =
      pass == Pass::backward ? layout_.block_segment(cfg_.n_layers - 1) : kNoSegment;
  HeadParams h;
  h.norm = src.acquire(head, pass, cfg_.tied_embeddings ? emb : next);
  h.weight = cfg_.tied_embeddings ? src.acquire(emb, pass, next) : h.norm + cfg_.dim;
  return h;
}

void Llama::release_head(ParamSource& src, Pass pass) {
  if (cfg_.tied_embeddings) src.release(layout_.embedding_segment(), pass);
  src.release(layout_.head_segment(), pass);
}

void Llama::head_forward(const HeadParams& h, int first_row, int rows) {
  const int C = cfg_.dim, V = vocab_;
  const int norm_rows = tp_ ? int(resid_rows(rows)) : first_row + rows;
  rmsnorm_forward(acts_.final_ln(), acts_.final_rstd(), acts_.final_out(), h.norm, norm_rows, C,
                  cfg_.rms_eps);
  // Under sequence parallelism the gathered rows stay in gathered_ for backward_head.
  const float* in = tp_ ? column_input(acts_.final_ln(), rows) : acts_.final_ln();
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

const float* Llama::forward_logits(ParamSource& src, const int32_t* tokens, int B, int T) {
  forward_blocks(src, tokens, B, T);
  head_forward(acquire_head(src, Pass::forward), 0, B * T);
  release_head(src, Pass::forward);
  return logits_.data();
}

const float* Llama::forward_logits(const float* params, const int32_t* tokens, int B, int T) {
  FlatParams src(params);
  return forward_logits(src, tokens, B, T);
}

const float* Llama::forward_last_logits(const float* params, const int32_t* tokens, int T) {
  FlatParams src(params);
  forward_blocks(src, tokens, 1, T);
  head_forward(acquire_head(src, Pass::forward), T - 1, 1);
  release_head(src, Pass::forward);
  return logits_.data();
}

double Llama::forward_loss(ParamSource& src, const int32_t* tokens, const int32_t* targets, int B,
                           int T) {
  forward_logits(src, tokens, B, T);
  return loss(targets, B * T, false, 0.0f);
}

double Llama::forward_loss(const float* params, const int32_t* tokens, const int32_t* targets,
                           int B, int T) {
  FlatParams src(params);
  return forward_loss(src, tokens, targets, B, T);
}

double Llama::forward_backward(ParamSource& src, GradSink& sink, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  forward_blocks(src, tokens, B, T);
  // The head's parameters stay acquired from its forward through its backward.
  const HeadParams h = acquire_head(src, Pass::backward);
  head_forward(h, 0, B * T);
  const double total = loss(targets, B * T, true, grad_scale);
  float* emb_grad = backward_head(h, sink, B * T);
  release_head(src, Pass::backward);
  backward_blocks(src, sink, B, T);
  if (!emb_grad) emb_grad = sink.acquire(layout_.embedding_segment());
  if (!tp_) {
    embedding_backward(emb_grad, d_resid_.data(), tokens, B * T, cfg_.dim, cfg_.vocab_size);
  } else {
    const float* d_full = row_output_grad(d_resid_.data(), B * T);
    embedding_backward_slice(emb_grad, d_full, tokens, B * T, cfg_.dim, vocab_first_, vocab_);
  }
  sink.release(layout_.embedding_segment());
  return total;
}

double Llama::forward_backward(const float* params, float* grads, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  FlatParams src(params);
  FlatGrads sink(grads);
  return forward_backward(src, sink, tokens, targets, B, T, grad_scale);
}

void Llama::recompute_block(const float* P, int l, int B, int T) {
  switch (acts_.policy()) {
    case Recompute::none: return;
    case Recompute::full: block_forward(P, l, nullptr, B, T); return;
    case Recompute::selective: {
      // Everything but the GEMMs, whose inputs were kept.
      const BlockActs& a = acts_.block(l);
      const BlockOffsets& o = layout_.block_offsets();
      const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, H = heads_, Hkv = kv_heads_,
                D = cfg_.head_dim(), Q = int(w_.Q), A = int(w_.A);
      rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, R, C, cfg_.rms_eps);
      AttentionShape s{B, T, H, Hkv, D, Q, Q};
      attention_forward(a.att, a.lse, a.qkv, a.qkv + A, a.qkv + A + Hkv * D, s);
      rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, R, C, cfg_.rms_eps);
      swiglu_forward(a.h, a.gate_up, N, int(w_.F));
      return;
    }
  }
}

float* Llama::backward_head(const HeadParams& h, GradSink& sink, int N) {
  const int C = cfg_.dim, V = vocab_, R = int(resid_rows(N));
  const ParamSegment head = layout_.head_segment();
  float* d_resid = d_resid_.data();  // (N, C) gradient of the residual stream
  float* d_ln = d_ln_.data();        // (N, C)
  float* norm_grad = sink.acquire(head);
  // Tied: the embedding's gradient stays acquired until the lookup's backward adds to it.
  float* emb_grad = cfg_.tied_embeddings ? sink.acquire(layout_.embedding_segment()) : nullptr;
  float* weight_grad = cfg_.tied_embeddings ? emb_grad : norm_grad + C;
  // logits_ holds d(loss)/d(logits) here.
  // head_forward left the full (N, C) head input where column_input put it (gathered_ under
  // sequence parallelism): nothing has touched it since.
  const float* head_in = tp_ && tp_->sequence_parallel() ? gathered_.data() : acts_.final_ln();
  matmul_dyw(d_ln, logits_.data(), h.weight, N, C, V);
  accumulate_dw(weight_grad, logits_.data(), head_in, N, C, V);
  std::memset(d_resid, 0, size_t(R) * C * sizeof(float));
  rmsnorm_backward(d_resid, norm_grad, column_input_grad(d_ln, N), acts_.final_out(), h.norm,
                   acts_.final_rstd(), R, C);
  sink.release(head);
  return emb_grad;
}

void Llama::backward_blocks(ParamSource& src, GradSink& sink, int B, int T) {
  const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, H = heads_, Hkv = kv_heads_,
            D = cfg_.head_dim(), Q = int(w_.Q), A = int(w_.A), F = int(w_.F);
  float* d_resid = d_resid_.data();  // (R, C)
  float* d_ln = d_ln_.data();        // (N, C) this rank's partial gradient of a norm's output
  for (int l = cfg_.n_layers - 1; l >= 0; --l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l > 0 ? layout_.block_segment(l - 1) : layout_.embedding_segment();
    const float* P = src.acquire(seg, Pass::backward, next);
    float* G = sink.acquire(seg);
    recompute_block(P, l, B, T);
    const BlockActs& a = acts_.block(l);
    const BlockOffsets& o = layout_.block_offsets();
    // MLP: out = mid + down(swiglu(gate_up(norm(mid)))); d_resid flows to mid unchanged.
    const float* d_out = row_output_grad(d_resid, N);                  // (N, C)
    matmul_dyw(d_h_.data(), d_out, P + o.down, N, F, C);               // (N, F)
    accumulate_dw(G + o.down, d_out, a.h, N, F, C);
    swiglu_backward(d_gate_up_.data(), d_h_.data(), a.gate_up, N, F);  // (N, 2F)
    matmul_dyw(d_ln, d_gate_up_.data(), P + o.gate_up, N, C, 2 * F);
    // Sequence parallelism kept only this rank's rows of ln2; the weight gradient needs all of
    // them, so they are gathered again (as Megatron does) rather than stored whole.
    accumulate_dw(G + o.gate_up, d_gate_up_.data(), column_input(a.ln2, N), N, C, 2 * F);
    rmsnorm_backward(d_resid, G + o.mlp_norm, column_input_grad(d_ln, N), a.mid, P + o.mlp_norm,
                     a.rstd2, R, C);
    // Attention: mid = x_in + o(attn(rope(qkv(norm(x_in))))).
    const float* d_mid = row_output_grad(d_resid, N);                  // (N, C)
    matmul_dyw(d_att_.data(), d_mid, P + o.o, N, A, C);                // (N, A)
    accumulate_dw(G + o.o, d_mid, a.att, N, A, C);
    float* d_qkv = d_qkv_.data();                                      // (N, Q)
    std::memset(d_qkv, 0, size_t(N) * Q * sizeof(float));
    AttentionShape s{B, T, H, Hkv, D, Q, Q};
    attention_backward(d_qkv, d_qkv + A, d_qkv + A + Hkv * D, d_att_.data(), a.qkv, a.qkv + A,
                       a.qkv + A + Hkv * D, a.att, a.lse, s);
    rope_backward(d_qkv, rope_cos_.data(), rope_sin_.data(), B, T, H, D, Q);
    rope_backward(d_qkv + A, rope_cos_.data(), rope_sin_.data(), B, T, Hkv, D, Q);
    matmul_dyw(d_ln, d_qkv, P + o.qkv, N, C, Q);
    accumulate_dw(G + o.qkv, d_qkv, column_input(a.ln1, N), N, C, Q);
    rmsnorm_backward(d_resid, G + o.attn_norm, column_input_grad(d_ln, N), a.x_in,
                     P + o.attn_norm, a.rstd1, R, C);
    sink.release(seg);
    src.release(seg, Pass::backward);
  }
}

}  // namespace ff
