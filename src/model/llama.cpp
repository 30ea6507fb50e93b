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
}  // namespace

Llama::Llama(const ModelConfig& config, int max_batch, Recompute policy)
    : cfg_(config),
      layout_((config.validate(), config)),
      max_batch_(max_batch),
      acts_(config, max_batch * config.seq_len, policy) {
  const int T = cfg_.seq_len, D = cfg_.head_dim();
  const size_t N = size_t(max_batch) * T, C = cfg_.dim, V = cfg_.vocab_size;
  const size_t A = size_t(cfg_.n_heads) * D, Q = cfg_.qkv_dim(), F = cfg_.ffn_dim;
  rope_cos_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_sin_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_tables(rope_cos_.data(), rope_sin_.data(), T, D, cfg_.rope_theta);
  logits_.allocate(N * V, MemCategory::workspace);
  losses_.allocate(N, MemCategory::workspace);
  d_resid_.allocate(N * C, MemCategory::workspace);
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
}

namespace {
const ParamSegment kNoSegment{};
}

void Llama::block_forward(const float* P, int l, float* out, int B, int T) {
  const BlockActs& a = acts_.block(l);
  const BlockOffsets& o = layout_.block_offsets();
  const int N = B * T, C = cfg_.dim, H = cfg_.n_heads, Hkv = cfg_.n_kv_heads,
            D = cfg_.head_dim(), Q = cfg_.qkv_dim(), A = H * D, F = cfg_.ffn_dim;
  rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, N, C, cfg_.rms_eps);
  matmul_xwt(a.qkv, a.ln1, P + o.qkv, N, C, Q);                      // (N, Q)
  rope_forward(a.qkv, rope_cos_.data(), rope_sin_.data(), B, T, H, D, Q);
  rope_forward(a.qkv + A, rope_cos_.data(), rope_sin_.data(), B, T, Hkv, D, Q);
  AttentionShape s{B, T, H, Hkv, D, Q, Q};
  attention_forward(a.att, a.lse, a.qkv, a.qkv + A, a.qkv + A + Hkv * D, s);  // (N, A)
  // The residual add rides on the GEMM's beta = 1.
  copy_rows(a.mid, a.x_in, size_t(N) * C);
  gemm(false, true, N, C, A, 1.0f, a.att, A, P + o.o, A, 1.0f, a.mid, C);  // (N, C)
  rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, N, C, cfg_.rms_eps);
  matmul_xwt(a.gate_up, a.ln2, P + o.gate_up, N, C, 2 * F);          // (N, 2F)
  swiglu_forward(a.h, a.gate_up, N, F);                              // (N, F)
  if (out) {
    copy_rows(out, a.mid, size_t(N) * C);
    gemm(false, true, N, C, F, 1.0f, a.h, F, P + o.down, F, 1.0f, out, C);
  }
}

void Llama::forward_blocks(ParamSource& src, const int32_t* tokens, int B, int T) {
  check_shape(B, T);
  const int N = B * T, L = cfg_.n_layers;
  const ParamSegment emb = layout_.embedding_segment();
  const float* E = src.acquire(emb, Pass::forward, layout_.block_segment(0));
  embedding_forward(acts_.block(0).x_in, tokens, E, N, cfg_.dim);
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
  const int N = first_row + rows, C = cfg_.dim, V = cfg_.vocab_size;
  rmsnorm_forward(acts_.final_ln(), acts_.final_rstd(), acts_.final_out(), h.norm, N, C,
                  cfg_.rms_eps);
  matmul_xwt(logits_.data(), acts_.final_ln() + size_t(first_row) * C, h.weight, rows, C, V);
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
  return cross_entropy_forward(logits_.data(), losses_.data(), targets, B * T, cfg_.vocab_size);
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
  double loss = cross_entropy_forward_backward(logits_.data(), losses_.data(), targets, B * T,
                                               cfg_.vocab_size, grad_scale);
  float* emb_grad = backward_head(h, sink, B * T);
  release_head(src, Pass::backward);
  backward_blocks(src, sink, B, T);
  if (!emb_grad) emb_grad = sink.acquire(layout_.embedding_segment());
  embedding_backward(emb_grad, d_resid_.data(), tokens, B * T, cfg_.dim, cfg_.vocab_size);
  sink.release(layout_.embedding_segment());
  return loss;
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
      const int N = B * T, C = cfg_.dim, H = cfg_.n_heads, Hkv = cfg_.n_kv_heads,
                D = cfg_.head_dim(), Q = cfg_.qkv_dim(), A = H * D;
      rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, N, C, cfg_.rms_eps);
      AttentionShape s{B, T, H, Hkv, D, Q, Q};
      attention_forward(a.att, a.lse, a.qkv, a.qkv + A, a.qkv + A + Hkv * D, s);
      rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, N, C, cfg_.rms_eps);
      swiglu_forward(a.h, a.gate_up, N, cfg_.ffn_dim);
      return;
    }
  }
}

float* Llama::backward_head(const HeadParams& h, GradSink& sink, int N) {
  const int C = cfg_.dim, V = cfg_.vocab_size;
  const ParamSegment head = layout_.head_segment();
  float* d_resid = d_resid_.data();  // (N, C) gradient of the residual stream
  float* d_ln = d_ln_.data();        // (N, C)
  float* norm_grad = sink.acquire(head);
  // Tied: the embedding's gradient stays acquired until the lookup's backward adds to it.
  float* emb_grad = cfg_.tied_embeddings ? sink.acquire(layout_.embedding_segment()) : nullptr;
  float* weight_grad = cfg_.tied_embeddings ? emb_grad : norm_grad + C;
  // logits_ holds d(loss)/d(logits) here.
  matmul_dyw(d_ln, logits_.data(), h.weight, N, C, V);
  accumulate_dw(weight_grad, logits_.data(), acts_.final_ln(), N, C, V);
  std::memset(d_resid, 0, size_t(N) * C * sizeof(float));
  rmsnorm_backward(d_resid, norm_grad, d_ln, acts_.final_out(), h.norm, acts_.final_rstd(), N, C);
  sink.release(head);
  return emb_grad;
}

void Llama::backward_blocks(ParamSource& src, GradSink& sink, int B, int T) {
  const int N = B * T, C = cfg_.dim, H = cfg_.n_heads, Hkv = cfg_.n_kv_heads,
            D = cfg_.head_dim(), Q = cfg_.qkv_dim(), A = H * D, F = cfg_.ffn_dim;
  float* d_resid = d_resid_.data();
  float* d_ln = d_ln_.data();
  for (int l = cfg_.n_layers - 1; l >= 0; --l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l > 0 ? layout_.block_segment(l - 1) : layout_.embedding_segment();
    const float* P = src.acquire(seg, Pass::backward, next);
    float* G = sink.acquire(seg);
    recompute_block(P, l, B, T);
    const BlockActs& a = acts_.block(l);
    const BlockOffsets& o = layout_.block_offsets();
    // MLP: out = mid + down(swiglu(gate_up(norm(mid)))); d_resid flows to mid unchanged.
    matmul_dyw(d_h_.data(), d_resid, P + o.down, N, F, C);             // (N, F)
    accumulate_dw(G + o.down, d_resid, a.h, N, F, C);
    swiglu_backward(d_gate_up_.data(), d_h_.data(), a.gate_up, N, F);  // (N, 2F)
    matmul_dyw(d_ln, d_gate_up_.data(), P + o.gate_up, N, C, 2 * F);
    accumulate_dw(G + o.gate_up, d_gate_up_.data(), a.ln2, N, C, 2 * F);
    rmsnorm_backward(d_resid, G + o.mlp_norm, d_ln, a.mid, P + o.mlp_norm, a.rstd2, N, C);
    // Attention: mid = x_in + o(attn(rope(qkv(norm(x_in))))).
    matmul_dyw(d_att_.data(), d_resid, P + o.o, N, A, C);              // (N, A)
    accumulate_dw(G + o.o, d_resid, a.att, N, A, C);
    float* d_qkv = d_qkv_.data();                                      // (N, Q)
    std::memset(d_qkv, 0, size_t(N) * Q * sizeof(float));
    AttentionShape s{B, T, H, Hkv, D, Q, Q};
    attention_backward(d_qkv, d_qkv + A, d_qkv + A + Hkv * D, d_att_.data(), a.qkv, a.qkv + A,
                       a.qkv + A + Hkv * D, a.att, a.lse, s);
    rope_backward(d_qkv, rope_cos_.data(), rope_sin_.data(), B, T, H, D, Q);
    rope_backward(d_qkv + A, rope_cos_.data(), rope_sin_.data(), B, T, Hkv, D, Q);
    matmul_dyw(d_ln, d_qkv, P + o.qkv, N, C, Q);
    accumulate_dw(G + o.qkv, d_qkv, a.ln1, N, C, Q);
    rmsnorm_backward(d_resid, G + o.attn_norm, d_ln, a.x_in, P + o.attn_norm, a.rstd1, N, C);
    sink.release(seg);
    src.release(seg, Pass::backward);
  }
}

}  // namespace ff
