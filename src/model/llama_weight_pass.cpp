// What a block's backward may need besides the plain reverse pass: recomputing the activations a
// policy dropped, and the weight pass of a zero-bubble split (the GEMMs the input pass deferred).
#include "kernels/bias.h"
#include "kernels/rmsnorm.h"
#include "kernels/swiglu.h"
#include "model/linear.h"
#include "model/llama.h"

namespace ff {

void Llama::recompute_block(const float* P, int l, const BlockActs& a, int B, int T) {
  switch (policy_) {
    case Recompute::none: return;
    case Recompute::full: block_forward(P, l, a, nullptr, B, T); return;
    case Recompute::selective: {
      // Everything but the GEMMs, whose inputs were kept: the norms, the attention core and the
      // dense MLP's SwiGLU.
      const BlockOffsets& o = layout_.block_offsets(l);
      const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim;
      rmsnorm_forward(a.ln1, a.rstd1, a.x_in, P + o.attn_norm, R, C, cfg_.rms_eps);
      attention_into(a, B, T);
      rmsnorm_forward(a.ln2, a.rstd2, a.mid, P + o.mlp_norm, R, C, cfg_.rms_eps);
      if (o.kind == BlockKind::dense) swiglu_forward(a.mlp.h, a.mlp.gate_up, N, int(w_.F));  // MoE keeps all
      return;
    }
  }
}

// DeferredGrads (model_hooks.h) of one dense block, back to back.
size_t Llama::deferred_floats_per_block(int N) const {
  return size_t(N) * size_t(2 * w_.C + 2 * w_.F + w_.Q) + 2 * size_t(w_.C);
}

size_t Llama::deferred_floats(int n_blocks, int N) const { return size_t(n_blocks) * deferred_floats_per_block(N); }

DeferredGrads Llama::deferred_at(float* base, int N) const {
  DeferredGrads d;
  d.d_out = base;
  d.d_gate_up = d.d_out + size_t(N) * w_.C;
  d.d_mid = d.d_gate_up + size_t(N) * 2 * w_.F;
  d.d_qkv = d.d_mid + size_t(N) * w_.C;
  d.norms = d.d_qkv + size_t(N) * w_.Q;
  return d;
}

void Llama::block_weight_grads(const float* P, float* G, int l, const BlockActs& a, int B, int T,
                               const DeferredGrads& def) {
  const BlockOffsets& o = layout_.block_offsets(l);
  const int N = B * T, C = cfg_.dim, Q = int(w_.Q), A = int(w_.A);
  // A recomputing policy dropped some GEMM inputs (h, att, the norms' outputs) after the input
  // pass; bring them back.
  recompute_block(P, l, a, B, T);
  hooks_->mlp_weight_grads(mlp_call(P, l, a, N), G, def);
  accumulate_dw(*gemm_, block_grad(G, l, o.o), def.d_mid, a.att, N, A, C);
  accumulate_dw(*gemm_, block_grad(G, l, o.qkv), def.d_qkv, hooks_->column_input(a.ln1, N, C), N, C, Q);
  if (cfg_.qkv_bias) bias_backward(G + o.qkv_bias, def.d_qkv, size_t(N), Q, Q, gemm_rounds_grads_to());
  for (int i = 0; i < C; ++i) G[o.attn_norm + i] += def.norms[i], G[o.mlp_norm + i] += def.norms[C + i];
}

void ModelHooks::dense_mlp_weight_grads(ModelHooks& h, const MlpCall& m, float* G, const DeferredGrads& def) {
  const BlockActs& a = *m.a;
  const int N = m.N, C = m.C, F = m.F;
  accumulate_dw(*m.gemm, m.grad(G, m.o->mlp.down), def.d_out, a.mlp.h, N, F, C);
  accumulate_dw(*m.gemm, m.grad(G, m.o->mlp.gate_up), def.d_gate_up, h.column_input(a.ln2, N, C), N, C, 2 * F);
}

}  // namespace ff
