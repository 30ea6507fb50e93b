// The LLaMA decoder's forward and backward, top to bottom, as llm.c writes gpt2_forward and
// gpt2_backward:
//
//   embedding -> for each block: norm, q/k/v, RoPE, attention, o + residual,
//                                norm, gate/up, SwiGLU, down + residual
//             -> final norm -> LM head -> loss
//   and backward through the same steps in reverse.
//
// Each step a parallelism may change is a call on hooks_ (model_hooks.h), the serial computation
// unless a parallel wrapper passed its own. Parameters arrive one segment at a time (acquire,
// with the segment wanted next as a prefetch hint; release when done) and gradients leave the
// same way, so data parallelism and ZeRO stay outside. Activations are the caller's storage.
//
// Shapes: N = B*T tokens; R = resid rows this rank holds (N, or N/t under sequence parallelism);
// C = dim; Q = q/k/v width; A = H*D attention width; F = FFN width; V = vocabulary rows held.
#include <cstring>

#include "kernels/bias.h"
#include "kernels/convert.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "model/linear.h"
#include "model/llama.h"

namespace ff {

// ---- the whole model ----

double Llama::forward_backward(ParamSource& src, GradSink& sink, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  check_shape(B, T);
  Activations& acts = whole();
  const int N = B * T, L = cfg_.n_layers;
  loss_scale_ = grad_scale * balance_weight_;
  mark_documents(acts, tokens, B, T);
  embed(src, acts, tokens, N, 0);                                                     // (R, C)
  blocks_forward(src, acts, 0, L, acts.final_out(), B, T, layout_.head_segment());    // (R, C)
  float* tied_emb_grad = nullptr;
  const double loss = head_forward_backward(src, sink, acts, targets, N, grad_scale,
                                            layout_.block_segment(L - 1), &tied_emb_grad);
  blocks_backward(src, sink, acts, 0, L, B, T, layout_.embedding_segment(), BackwardPart::all, nullptr);
  embedding_backward(sink, tied_emb_grad, tokens, N);
  return loss;
}

double Llama::forward_loss(ParamSource& src, const int32_t* tokens, const int32_t* targets, int B, int T) {
  check_shape(B, T);
  Activations& acts = whole();
  mark_documents(acts, tokens, B, T);
  embed(src, acts, tokens, B * T, 0);
  blocks_forward(src, acts, 0, cfg_.n_layers, acts.final_out(), B, T, layout_.head_segment());
  return head_loss(src, acts, targets, B * T);
}

// ---- forward ----

void Llama::embed(ParamSource& src, Activations& acts, const int32_t* tokens, int N, int first_layer) {
  const ParamSegment emb = layout_.embedding_segment();
  const float* E = src.acquire(emb, layout_.block_segment(first_layer)).f32();
  hooks_->embedding(acts.block(0).x_in, tokens, E, N, cfg_.dim, vocab_);  // (R, C)
  src.release(emb);
}

void Llama::blocks_forward(ParamSource& src, Activations& acts, int first, int last, float* out, int B,
                           int T, const ParamSegment& after) {
  for (int l = first; l < last; ++l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l + 1 < last ? layout_.block_segment(l + 1) : after;
    float* y = l + 1 < last ? acts.block(l + 1 - first).x_in : out;  // the next block's input
    const float* P = src.acquire(seg, next).f32();
    const ParamSegment ex = layout_.expert_segment(l);  // an MoE block's routed experts
    experts_ = ex.count ? src.acquire(ex, l + 1 < last ? layout_.expert_segment(l + 1) : ParamSegment{}).f32()
                        : nullptr;
    block_forward(P, l, acts.block(l - first), y, B, T);
    if (ex.count) src.release(ex);
    src.release(seg);
  }
}

// out null: everything but the block's output (what full recomputation needs).
void Llama::block_forward(const float* P, int l, const BlockActs& a, float* out, int B, int T) {
  const BlockOffsets& o = layout_.block_offsets(l);
  const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, D = cfg_.head_dim(), Q = int(w_.Q),
            A = int(w_.A);
  // Attention: mid = x_in + o(attn(rope(qkv(norm(x_in)) + qkv bias))).
  rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, R, C, cfg_.rms_eps);      // (R, C)
  matmul_xwt(*gemm_, a.qkv, hooks_->column_input(a.ln1, N, C), block_weight(P, l, o.qkv), N, C, Q);          // (N, Q)
  if (cfg_.qkv_bias) bias_forward(a.qkv, P + o.qkv_bias, size_t(N), Q, Q);                                 // before RoPE
  const RopeRows rope = rope_rows(a, B, T);
  rope_forward(a.qkv, rope.cos, rope.sin, rope.B, rope.T, heads_, D, Q);           // q
  rope_forward(a.qkv + A, rope.cos, rope.sin, rope.B, rope.T, kv_heads_, D, Q);    // k
  attention_into(a, B, T);                                                           // (N, A)
  hooks_->row_output(*gemm_, a.mid, a.x_in, a.att, block_weight(P, l, o.o), N, A, C);  // (R, C)
  // MLP: out = mid + down(swiglu(gate_up(norm(mid)))).
  rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, R, C, cfg_.rms_eps);        // (R, C)
  hooks_->mlp(mlp_call(P, l, a, N), out);                                            // (R, C)
}

void Llama::attention_into(const BlockActs& a, int B, int T) {
  const int N = B * T, D = cfg_.head_dim(), A = int(w_.A);
  // The hook writes a 16-bit att in its type; unrounded (the test's reference): fp32 rounded here.
  const bool staged = a.att.dtype() != DType::f32 && !rounding_in_kernels_;
  const TypedPtr att = staged ? TypedPtr(staging_.data()) : a.att;
  hooks_->attention(*gemm_, att, a.lse, a.qkv, a.qkv + A, a.qkv + A + kv_heads_ * D, attention_shape(a, B, T),
                    staging_.data());
  if (staged) convert_from_f32(a.att, staging_.data(), size_t(N) * A);
}

void ModelHooks::dense_mlp_forward(ModelHooks& h, const MlpCall& m, float* out) {
  const BlockActs& a = *m.a;
  const int N = m.N, C = m.C, F = m.F;
  // A 16-bit gate_up is rounded once, and SwiGLU reads the rounded values, as its recomputation
  // and its backward will: by the GEMM as it stores its output (a packed weight: no fp32 (N, 2F)
  // written and read back), else by SwiGLU's forward as it reads the staged fp32 output row by
  // row, or, unrounded (the test's reference), by a separate pass.
  const bool staged = a.mlp.gate_up.dtype() != DType::f32;
  const ConstTypedPtr ln2 = h.column_input(a.ln2, N, C);
  if (staged && m.round_in_kernels) {
    if (matmul_xwt_rounded(*m.gemm, a.mlp.gate_up, ln2, m.weight(m.o->mlp.gate_up), N, C, 2 * F, m.staging))
      swiglu_forward(a.mlp.h, a.mlp.gate_up, N, F);                                  // (N, F)
    else
      swiglu_forward_rounding(a.mlp.h, a.mlp.gate_up, m.staging, N, F);
  } else {
    float* gate_up = staged ? m.staging : a.mlp.gate_up.f32();
    matmul_xwt(*m.gemm, gate_up, ln2, m.weight(m.o->mlp.gate_up), N, C, 2 * F);                  // (N, 2F)
    if (staged) convert_from_f32(a.mlp.gate_up, gate_up, size_t(N) * 2 * F);
    swiglu_forward(a.mlp.h, a.mlp.gate_up, N, F);                                            // (N, F)
  }
  if (out) h.row_output(*m.gemm, out, a.mid, a.mlp.h, m.weight(m.o->mlp.down), N, F, C);     // (R, C)
}

Llama::HeadParams Llama::acquire_head(ParamSource& src, const ParamSegment& next) {
  const ParamSegment head = layout_.head_segment(), emb = layout_.embedding_segment();
  HeadParams h;
  h.norm = src.acquire(head, cfg_.tied_embeddings ? emb : next).f32();
  if (cfg_.tied_embeddings) h.weight = WeightRef(src.acquire(emb, next).f32(), int64_t(emb.offset));
  else h.weight = WeightRef(h.norm + cfg_.dim, int64_t(head.offset) + cfg_.dim);
  return h;
}

void Llama::release_head(ParamSource& src) {
  if (cfg_.tied_embeddings) src.release(layout_.embedding_segment());
  src.release(layout_.head_segment());
}

const float* Llama::head_forward(const HeadParams& h, Activations& acts, int first_row, int rows) {
  const int C = cfg_.dim;
  rmsnorm_forward(acts.final_ln(), acts.final_rstd(), acts.final_out(), h.norm,
                  int(resid_rows(first_row + rows)), C, cfg_.rms_eps);                    // (R, C)
  const float* in = hooks_->column_input(acts.final_ln(), size_t(first_row + rows), C).f32();  // (N, C)
  matmul_xwt(*gemm_, logits_.data(), in + size_t(first_row) * C, h.weight, rows, C, vocab_.count);  // (rows, V)
  return in;
}

double Llama::head_loss(ParamSource& src, Activations& acts, const int32_t* targets, int N) {
  head_forward(acquire_head(src, ParamSegment{}), acts, 0, N);
  release_head(src);
  return hooks_->loss(logits_.data(), losses_.data(), targets, N, vocab_, false, 0.0f, TypedPtr());
}

double Llama::head_forward_backward(ParamSource& src, GradSink& sink, Activations& acts,
                                    const int32_t* targets, int N, float grad_scale,
                                    const ParamSegment& next, float** tied_emb_grad) {
  // The head's parameters stay acquired from its forward through its backward, which runs now:
  // the (N, V) logits are scratch, too large to keep per micro-batch.
  const HeadParams h = acquire_head(src, next);
  const float* head_in = head_forward(h, acts, 0, N);
  const TypedPtr rounded_grad = logits_grad_rounded();
  const double total = hooks_->loss(logits_.data(), losses_.data(), targets, N, vocab_, true, grad_scale,
                                    rounded_grad);
  *tied_emb_grad = head_backward(h, sink, acts, head_in, N);
  release_head(src);
  return total;
}

// ---- backward ----

float* Llama::head_backward(const HeadParams& h, GradSink& sink, Activations& acts, const float* head_in,
                            int N) {
  const int C = cfg_.dim, R = int(resid_rows(N));
  const ParamSegment head = layout_.head_segment();
  float* d_resid = d_resid_.data();  // (R, C) gradient of the residual stream
  float* d_ln = d_ln_.data();        // (N, C)
  float* norm_grad = sink.acquire(head).f32();
  // Tied: the embedding's gradient stays acquired until the lookup's backward adds to it.
  float* emb_grad = cfg_.tied_embeddings ? sink.acquire(layout_.embedding_segment()).f32() : nullptr;
  float* weight_grad = cfg_.tied_embeddings ? emb_grad : norm_grad + C;
  // logits_ holds d(loss)/d(logits) here, and a 16-bit run's loss left it rounded as well.
  const TypedPtr rounded = logits_grad_rounded();
  if (rounded) ++rounded_grad_uses_;
  const ConstTypedPtr dy = rounded ? ConstTypedPtr(rounded) : ConstTypedPtr(logits_.data());
  matmul_dyw_dw(*gemm_, d_ln, weight_grad, dy, head_in, h.weight, N, C, vocab_.count);  // (N, C), (V, C)
  zero_rows(d_resid, size_t(R) * C);
  norm_backward(norm_grad, hooks_->column_input_backward(d_ln, size_t(N), C), acts.final_out(), h.norm,
                acts.final_rstd(), R);
  sink.release(head);
  return emb_grad;
}

void Llama::blocks_backward(ParamSource& src, GradSink& sink, Activations& acts, int first, int last,
                            int B, int T, const ParamSegment& before, BackwardPart part, float* deferred) {
  const size_t per_block = deferred_floats_per_block(B * T);
  for (int l = last - 1; l >= first; --l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l > first ? layout_.block_segment(l - 1) : before;
    const float* P = src.acquire(seg, next).f32();
    const ParamSegment ex = layout_.expert_segment(l);
    experts_ = ex.count ? src.acquire(ex, l > first ? layout_.expert_segment(l - 1) : ParamSegment{}).f32()
                        : nullptr;
    const BlockActs& a = acts.block(l - first);
    if (part == BackwardPart::weight) {
      resid_grad_rounded_ = false;  // d_resid_ was not the last thing written
      block_weight_grads(P, sink.acquire(seg).f32(), l, a, B, T,
                         deferred_at(deferred + size_t(l - first) * per_block, B * T));
      sink.release(seg);
    } else {
      // The input pass touches no gradient of the sink: everything it owes is deferred.
      float* G = part == BackwardPart::all ? sink.acquire(seg).f32() : nullptr;
      DeferredGrads def{};
      if (part == BackwardPart::input) def = deferred_at(deferred + size_t(l - first) * per_block, B * T);
      expert_grads_ = G && ex.count ? sink.acquire(ex).f32() : nullptr;
      recompute_block(P, l, a, B, T);
      block_backward(P, G, l, a, B, T, part == BackwardPart::input ? &def : nullptr);
      if (expert_grads_) sink.release(ex);  // above the block's segment: released first
      if (G) sink.release(seg);
    }
    if (ex.count) src.release(ex);
    src.release(seg);
  }
}

void Llama::block_backward(const float* P, float* G, int l, const BlockActs& a, int B, int T,
                           const DeferredGrads* def) {
  const BlockOffsets& o = layout_.block_offsets(l);
  const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, Q = int(w_.Q), A = int(w_.A);
  float* d_resid = d_resid_.data();  // (R, C)
  float* d_ln = d_ln_.data();        // (N, C) this rank's partial gradient of a norm's output
  if (def) std::memset(def->norms, 0, 2 * size_t(C) * sizeof(float));
  // MLP: out = mid + mlp(norm(mid)); d_resid flows to mid unchanged.
  hooks_->mlp_backward(mlp_call(P, l, a, N), d_resid, d_ln, G, def);                 // d_ln (N, C)
  norm_backward(def ? def->norms + C : G + o.mlp_norm, hooks_->column_input_backward(d_ln, N, C), a.mid,
                P + o.mlp_norm, a.rstd2, R);
  // Attention: mid = x_in + o(attn(rope(qkv(norm(x_in))))).
  const float* d_mid = hooks_->row_output_backward(d_resid, N, C);                   // (N, C)
  matmul_dyw_dw(*gemm_, d_att_.data(), def ? nullptr : G + o.o, resid_grad_for_gemm(d_mid), a.att,
                block_weight(P, l, o.o), N, A, C);
  if (def) copy_rows(def->d_mid, d_mid, size_t(N) * C);
  float* d_qkv = d_qkv_.data();                                                      // (N, Q)
  if (!hooks_->attention_backward_overwrites(*gemm_)) zero_rows(d_qkv, size_t(N) * Q);
  resid_grad_rounded_ = false;  // its rounded copy lived in d_qkv_
  // Unrounded (the test's reference): a 16-bit att widened here rather than by the hook.
  const bool staged = a.att.dtype() != DType::f32 && !rounding_in_kernels_;
  if (staged) convert_to_f32(staging_.data(), a.att, size_t(N) * A);
  const ConstTypedPtr att = staged ? ConstTypedPtr(staging_.data()) : ConstTypedPtr(a.att);
  const ConstTypedPtr d_qkv_gemm = attention_backward_for_gemm(a, att, B, T, def != nullptr);  // and RoPE's
  // The bias gradient sums what the weight gradient's GEMM reads (16-bit runs: the rounded copy, or
  // fp32 rows rounded as that GEMM rounds them); deferred, the weight pass adds it from the kept rows.
  if (cfg_.qkv_bias && !def) bias_backward(G + o.qkv_bias, d_qkv_gemm, size_t(N), Q, Q, gemm_rounds_grads_to());
  // Sequence parallelism kept only this rank's rows of ln1; the weight gradient needs all of
  // them, so they are gathered again (as Megatron does) rather than stored whole.
  const ConstTypedPtr ln1 = def ? ConstTypedPtr() : hooks_->column_input(a.ln1, N, C);  // (N, C)
  matmul_dyw_dw(*gemm_, d_ln, def ? nullptr : G + o.qkv, d_qkv_gemm, ln1, block_weight(P, l, o.qkv), N, C,
                Q);  // (N, C)
  if (def) copy_rows(def->d_qkv, d_qkv, size_t(N) * Q);
  norm_backward(def ? def->norms : G + o.attn_norm, hooks_->column_input_backward(d_ln, N, C), a.x_in,
                P + o.attn_norm, a.rstd1, R);
}

void ModelHooks::dense_mlp_backward(ModelHooks& h, const MlpCall& m, const float* d_resid, float* d_ln,
                                    float* G, const DeferredGrads* def) {
  const BlockActs& a = *m.a;
  const int N = m.N, C = m.C, F = m.F;
  const float* d_out = h.row_output_backward(d_resid, N, C);                         // (N, C)
  // Rounded by the norm backward that wrote it, unless the dual moved the rows (sp gathers them).
  const bool rounded = m.d_resid_rounded && d_out == d_resid;
  if (rounded && m.rounded_grad_uses) ++*m.rounded_grad_uses;
  const ConstTypedPtr dy = rounded ? m.d_resid_rounded : ConstTypedPtr(d_out);
  matmul_dyw_dw(*m.gemm, m.d_h, def ? nullptr : G + m.o->mlp.down, dy, a.mlp.h, m.weight(m.o->mlp.down), N, F,
                C);                                                                  // (N, F)
  if (def) copy_rows(def->d_out, d_out, size_t(N) * C);
  // Only gate/up's two GEMMs read its output gradient: in a 16-bit run SwiGLU's backward writes it
  // rounded, once, into the scratch (the same bits those GEMMs would round). Deferred: kept fp32.
  const TypedPtr d_gate_up(m.d_gate_up, def ? DType::f32 : a.mlp.gate_up.dtype());
  swiglu_backward(d_gate_up, m.d_h, a.mlp.gate_up, N, F);                            // (N, 2F)
  const ConstTypedPtr ln2 = def ? ConstTypedPtr() : h.column_input(a.ln2, N, C);     // (N, C)
  matmul_dyw_dw(*m.gemm, d_ln, def ? nullptr : G + m.o->mlp.gate_up, d_gate_up, ln2, m.weight(m.o->mlp.gate_up),
                N, C, 2 * F);                                                        // (N, C)
  if (def) copy_rows(def->d_gate_up, m.d_gate_up, size_t(N) * 2 * F);
}

void Llama::embedding_backward(GradSink& sink, float* emb_grad, const int32_t* tokens, int N) {
  const ParamSegment emb = layout_.embedding_segment();
  if (!emb_grad) emb_grad = sink.acquire(emb).f32();
  hooks_->embedding_backward(emb_grad, d_resid_.data(), tokens, N, cfg_.dim, vocab_);  // (V, C)
  sink.release(emb);
}

// ---- shared by the steps ----

AttentionShape Llama::attention_shape(const BlockActs& a, int B, int T) {
  const int Q = int(w_.Q);
  AttentionShape s{B, T, heads_, kv_heads_, cfg_.head_dim(), Q, Q};
  if (a.doc) s.doc = a.doc, s.tiles = &doc_tiles_;
  return s;
}

Llama::RopeRows Llama::rope_rows(const BlockActs& a, int B, int T) const {
  if (a.doc) return {a.rope_cos, a.rope_sin, 1, B * T};
  return {rope_cos_.data(), rope_sin_.data(), B, T};
}

WeightRef Llama::block_weight(const float* P, int l, size_t offset) const {
  return {P + offset, int64_t(layout_.block_segment(l).offset + offset)};
}

WeightGradRef Llama::block_grad(float* G, int l, size_t offset) const {
  return {G + offset, int64_t(layout_.block_segment(l).offset + offset)};
}

MlpCall Llama::mlp_call(const float* P, int l, const BlockActs& a, int N) {
  MlpCall m{gemm_, P, &layout_.block_offsets(l), &a, N, cfg_.dim, int(w_.F), d_h_.data(), d_gate_up_.data(),
            staging_.data()};
  if (resid_grad_rounded_) m.d_resid_rounded = ConstTypedPtr(d_qkv_.data(), gemm_grad_dtype());
  m.rounded_grad_uses = &rounded_grad_uses_;
  m.round_in_kernels = rounding_in_kernels_;
  m.at = int64_t(layout_.block_segment(l).offset);
  if (layout_.block_kind(l) == BlockKind::moe) {
    m.PE = experts_, m.GE = expert_grads_, m.experts_at = int64_t(layout_.expert_segment(l).offset);
    m.moe = &cfg_.moe, m.w = &w_, m.router_bias = router_bias(l);
    m.stats = &moe_stats_.layers[size_t(l)], m.loss_scale = loss_scale_, m.moe_scratch = moe_scratch_.data();
  }
  return m;
}

}  // namespace ff
