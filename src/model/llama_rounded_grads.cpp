// Output gradients that reach a 16-bit GEMM already rounded. A bf16/fp16 linear rounds its output
// gradient dy before both its products; a separate pass over dy (read fp32, write 16-bit) costs as
// much memory traffic as the kernel that made dy. Here the kernels that make dy store it rounded as
// well, in the same pass: the norms' backward (the residual gradient read by o's and down's
// backward) and RoPE's backward (q/k/v's). The rounding is the same (nearest even, once, from the
// same fp32 values), so the GEMMs see the same bits: tested against the unfused path.
#include "kernels/gemm_precision.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "model/llama.h"

namespace ff {

DType Llama::gemm_grad_dtype() const {
  // fp8 stores every activation fp32 (act_dtype_ f32) and quantises inside its GEMMs; a model
  // whose context changed precision after it was built rounds in the GEMMs as before.
  const bool on =
      rounding_in_kernels_ && act_dtype_ != DType::f32 && gemm_->input_dtype == act_dtype_ && !gemm_->fp8;
  return on ? act_dtype_ : DType::f32;
}

DType Llama::gemm_rounds_grads_to() const {
  // fp8 quantises with per-tensor scales of its own, which a bias (no GEMM) does not take.
  return gemm_->fp8 ? DType::f32 : gemm_->input_dtype;
}

void Llama::norm_backward(float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                          int R) {
  const DType t = gemm_grad_dtype();
  if (t == DType::f32) {
    rmsnorm_backward(d_resid_.data(), dw, dy, x, w, rstd, R, cfg_.dim);
    resid_grad_rounded_ = false;
    return;
  }
  rmsnorm_backward(d_resid_.data(), TypedPtr(d_qkv_.data(), t), dw, dy, x, w, rstd, R, cfg_.dim);
  resid_grad_rounded_ = true;
}

ConstTypedPtr Llama::resid_grad_for_gemm(const float* dy) {
  // dy is d_resid_ itself unless the row output's dual moved it (sequence parallelism gathers the
  // rows elsewhere): only then is the copy of d_resid_ the GEMM's operand.
  if (!resid_grad_rounded_ || dy != d_resid_.data()) return ConstTypedPtr(dy);
  ++rounded_grad_uses_;
  return ConstTypedPtr(d_qkv_.data(), gemm_grad_dtype());
}

ConstTypedPtr Llama::qkv_grad_for_gemm(const BlockActs& a, int B, int T, bool keep_f32) {
  const int D = cfg_.head_dim(), Q = int(w_.Q), A = int(w_.A);
  float* d_qkv = d_qkv_.data();
  const DType t = gemm_grad_dtype();
  const size_t n = size_t(B) * T * Q;
  const RopeRows rope = rope_rows(a, B, T);
  // The rounded rows go to d_gate_up_ when it can hold them (2F >= Q/2: every usual shape).
  if (keep_f32 || t == DType::f32 || (n * dtype_size(t) + 3) / 4 > d_gate_up_.size()) {
    rope_backward(d_qkv, rope.cos, rope.sin, rope.B, rope.T, heads_, D, Q);
    rope_backward(d_qkv + A, rope.cos, rope.sin, rope.B, rope.T, kv_heads_, D, Q);
    return ConstTypedPtr(d_qkv);
  }
  const TypedPtr out(d_gate_up_.data(), t);
  rope_backward_rounded(out, d_qkv, rope.cos, rope.sin, rope.B, rope.T, heads_, kv_heads_, D, Q);
  ++rounded_grad_uses_;
  return out;
}

ConstTypedPtr Llama::attention_backward_for_gemm(const BlockActs& a, ConstTypedPtr att, int B, int T,
                                                 bool keep_f32) {
  const int D = cfg_.head_dim(), A = int(w_.A), kv = A + kv_heads_ * D;  // k's and v's columns
  float* d_qkv = d_qkv_.data();
  const size_t n = size_t(B) * T * size_t(w_.Q);
  // The serial bf16 kernel (the hooks' own, attention_backward_overwrites) rotates q's and k's
  // gradient back and rounds all three in its last pass: the bits of the two passes below.
  // Its tables rotate by position in the row, so a document-masked batch takes the two passes.
  if (!keep_f32 && !a.doc && gemm_grad_dtype() == DType::bf16 && hooks_->attention_backward_overwrites(*gemm_) &&
      (n * 2 + 3) / 4 <= d_gate_up_.size()) {
    const TypedPtr out(d_gate_up_.data(), DType::bf16);
    hooks_->attention_backward_rope_rounded(out, out.at(size_t(A)), out.at(size_t(kv)), d_att_.data(), a.qkv,
                                            a.qkv + A, a.qkv + kv, att, a.lse, attention_shape(a, B, T),
                                            rope_cos_.data(), rope_sin_.data());
    ++rounded_grad_uses_;
    return out;
  }
  hooks_->attention_backward(*gemm_, d_qkv, d_qkv + A, d_qkv + kv, d_att_.data(), a.qkv, a.qkv + A, a.qkv + kv,
                             att, a.lse, attention_shape(a, B, T), staging_.data());
  return qkv_grad_for_gemm(a, B, T, keep_f32);  // RoPE's backward
}

TypedPtr Llama::logits_grad_rounded() {
  const DType t = gemm_grad_dtype();
  return t == DType::f32 || logits_grad16_.size() == 0 ? TypedPtr() : TypedPtr(logits_grad16_.data(), t);
}

}  // namespace ff
