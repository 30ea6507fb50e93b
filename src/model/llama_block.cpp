#include <cstring>

#include "kernels/flash_attention.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "model/linear.h"
#include "model/llama.h"

// One decoder block: forward, recompute (per policy) and backward, whole or split into the
// input-gradient and weight-gradient passes of zero-bubble pipeline schedules.
namespace ff {

void Llama::block_forward(const float* P, int l, float* out, int B, int T) {
  const BlockActs& a = acts(l);
  const BlockOffsets& o = layout_.block_offsets(l);
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
  matmul_xwt(a.gate_up, column_input(a.ln2, N), P + o.mlp.gate_up, N, C, 2 * F);  // (N, 2F)
  swiglu_forward(a.h, a.gate_up, N, F);                              // (N, F)
  if (out) row_parallel_residual(out, a.mid, a.h, P + o.mlp.down, N, F);  // (R, C)
}

void Llama::recompute_block(const float* P, int l, int B, int T) {
  switch (policy_) {
    case Recompute::none: return;
    case Recompute::full: block_forward(P, l, nullptr, B, T); return;
    case Recompute::selective: {
      // Everything but the GEMMs, whose inputs were kept.
      const BlockActs& a = acts(l);
      const BlockOffsets& o = layout_.block_offsets(l);
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

// What BackwardPart::input keeps per block for the weight pass: the output gradients of the four
// weight GEMMs (down: (N, C), gate/up: (N, 2F), o: (N, C), q/k/v: (N, Q)) and the two norm
// weights' gradients (2C), which are cheap and computed at once but added to the sink with the
// rest. The GEMM inputs are the stashed (or recomputed) activations.
size_t Llama::deferred_floats_per_block(int N) const {
  return size_t(N) * size_t(2 * w_.C + 2 * w_.F + w_.Q) + 2 * size_t(w_.C);
}

namespace {
struct Deferred {
  float *d_out, *d_gate_up, *d_mid, *d_qkv, *norms;
};
Deferred deferred_at(float* base, int N, const BlockWidths& w) {
  Deferred d;
  d.d_out = base;
  d.d_gate_up = d.d_out + size_t(N) * w.C;
  d.d_mid = d.d_gate_up + size_t(N) * 2 * w.F;
  d.d_qkv = d.d_mid + size_t(N) * w.C;
  d.norms = d.d_qkv + size_t(N) * w.Q;
  return d;
}
}  // namespace

void Llama::block_backward(const float* P, float* G, int l, int B, int T, float* deferred) {
  const int N = B * T, R = int(resid_rows(N)), C = cfg_.dim, H = heads_, Hkv = kv_heads_,
            D = cfg_.head_dim(), Q = int(w_.Q), A = int(w_.A), F = int(w_.F);
  float* d_resid = d_resid_.data();  // (R, C)
  float* d_ln = d_ln_.data();        // (N, C) this rank's partial gradient of a norm's output
  const BlockActs& a = acts(l);
  const BlockOffsets& o = layout_.block_offsets(l);
  Deferred def{};
  if (deferred) {
    def = deferred_at(deferred, N, w_);
    std::memset(def.norms, 0, 2 * size_t(C) * sizeof(float));
  }
  // MLP: out = mid + down(swiglu(gate_up(norm(mid)))); d_resid flows to mid unchanged.
  const float* d_out = row_output_grad(d_resid, N);                  // (N, C)
  matmul_dyw(d_h_.data(), d_out, P + o.mlp.down, N, F, C);               // (N, F)
  if (deferred) copy_rows(def.d_out, d_out, size_t(N) * C);
  else accumulate_dw(G + o.mlp.down, d_out, a.h, N, F, C);
  swiglu_backward(d_gate_up_.data(), d_h_.data(), a.gate_up, N, F);  // (N, 2F)
  matmul_dyw(d_ln, d_gate_up_.data(), P + o.mlp.gate_up, N, C, 2 * F);
  // Sequence parallelism kept only this rank's rows of ln2; the weight gradient needs all of
  // them, so they are gathered again (as Megatron does) rather than stored whole.
  if (deferred) copy_rows(def.d_gate_up, d_gate_up_.data(), size_t(N) * 2 * F);
  else accumulate_dw(G + o.mlp.gate_up, d_gate_up_.data(), column_input(a.ln2, N), N, C, 2 * F);
  rmsnorm_backward(d_resid, deferred ? def.norms + C : G + o.mlp_norm, column_input_grad(d_ln, N),
                   a.mid, P + o.mlp_norm, a.rstd2, R, C);
  // Attention: mid = x_in + o(attn(rope(qkv(norm(x_in))))).
  const float* d_mid = row_output_grad(d_resid, N);                  // (N, C)
  matmul_dyw(d_att_.data(), d_mid, P + o.o, N, A, C);                // (N, A)
  if (deferred) copy_rows(def.d_mid, d_mid, size_t(N) * C);
  else accumulate_dw(G + o.o, d_mid, a.att, N, A, C);
  float* d_qkv = d_qkv_.data();                                      // (N, Q)
  std::memset(d_qkv, 0, size_t(N) * Q * sizeof(float));
  AttentionShape s{B, T, H, Hkv, D, Q, Q};
  attention_backward(d_qkv, d_qkv + A, d_qkv + A + Hkv * D, d_att_.data(), a.qkv, a.qkv + A,
                     a.qkv + A + Hkv * D, a.att, a.lse, s);
  rope_backward(d_qkv, rope_cos_.data(), rope_sin_.data(), B, T, H, D, Q);
  rope_backward(d_qkv + A, rope_cos_.data(), rope_sin_.data(), B, T, Hkv, D, Q);
  matmul_dyw(d_ln, d_qkv, P + o.qkv, N, C, Q);
  if (deferred) copy_rows(def.d_qkv, d_qkv, size_t(N) * Q);
  else accumulate_dw(G + o.qkv, d_qkv, column_input(a.ln1, N), N, C, Q);
  rmsnorm_backward(d_resid, deferred ? def.norms : G + o.attn_norm, column_input_grad(d_ln, N),
                   a.x_in, P + o.attn_norm, a.rstd1, R, C);
}

void Llama::block_weight_grads(const float* P, float* G, int l, int B, int T, const float* deferred) {
  const int N = B * T, C = cfg_.dim, Q = int(w_.Q), A = int(w_.A), F = int(w_.F);
  // A recomputing policy dropped some GEMM inputs (h, att, the norms' outputs) after the input
  // pass; bring them back.
  recompute_block(P, l, B, T);
  const BlockActs& a = acts(l);
  const BlockOffsets& o = layout_.block_offsets(l);
  const Deferred def = deferred_at(const_cast<float*>(deferred), N, w_);
  accumulate_dw(G + o.mlp.down, def.d_out, a.h, N, F, C);
  accumulate_dw(G + o.mlp.gate_up, def.d_gate_up, column_input(a.ln2, N), N, C, 2 * F);
  accumulate_dw(G + o.o, def.d_mid, a.att, N, A, C);
  accumulate_dw(G + o.qkv, def.d_qkv, column_input(a.ln1, N), N, C, Q);
  for (int i = 0; i < C; ++i) G[o.attn_norm + i] += def.norms[i], G[o.mlp_norm + i] += def.norms[C + i];
}

}  // namespace ff
