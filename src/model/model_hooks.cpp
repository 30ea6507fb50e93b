#include "model/model_hooks.h"

#include "kernels/attention_precision.h"
#include "kernels/convert.h"
#include "kernels/flash_attention_bf16.h"
#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "model/linear.h"

namespace ff {

void ModelHooks::row_output(const GemmContext& g, float* out, const float* resid, ConstTypedPtr x, WeightRef W,
                            int N, int in, int C) {
  // The residual add rides on the GEMM's beta = 1.
  copy_rows(out, resid, size_t(N) * size_t(C));
  matmul_xwt_add(g, out, x, W, N, in, C);
}

void ModelHooks::attention(const GemmContext& g, TypedPtr att, float* lse, const float* q, const float* k,
                           const float* v, const AttentionShape& s, float* staging) {
  if (!attention_op && attention_runs_bf16(g)) return attention_forward_bf16(att, lse, q, k, v, s);
  const bool staged = att.dtype() != DType::f32;
  float* out = staged ? staging : att.f32();
  if (attention_op) attention_op->forward(g, out, lse, q, k, v, s);
  else attention_forward_run_precision(g, out, lse, q, k, v, s);
  if (staged) convert_from_f32(att, out, size_t(s.B) * s.T * s.H * s.D);  // rounded once, for o and backward
}

void ModelHooks::attention_backward(const GemmContext& g, float* dq, float* dk, float* dv, const float* d_att,
                                    const float* q, const float* k, const float* v, ConstTypedPtr att,
                                    const float* lse, const AttentionShape& s, float* staging) {
  if (!attention_op && attention_runs_bf16(g)) {
    if (attention_backward_overwrites(g))
      return attention_backward_bf16_into(dq, dk, dv, ConstTypedPtr(d_att), q, k, v, att, lse, s);
    return attention_backward_bf16(dq, dk, dv, ConstTypedPtr(d_att), q, k, v, att, lse, s);
  }
  // A 16-bit attention output is widened (exactly) for the backward's rowsum(dO * O).
  const bool staged = att.dtype() != DType::f32;
  if (staged) convert_to_f32(staging, att, size_t(s.B) * s.T * s.H * s.D);
  const float* out = staged ? staging : att.f32();
  if (attention_op) return attention_op->backward(g, dq, dk, dv, d_att, q, k, v, out, lse, s);
  attention_backward_run_precision(g, dq, dk, dv, d_att, q, k, v, out, lse, s);
}

bool ModelHooks::attention_backward_overwrites(const GemmContext& g) const {
  return !attention_op && attention_runs_bf16(g);
}

void ModelHooks::attention_backward_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, const float* d_att,
                                                 const float* q, const float* k, const float* v, ConstTypedPtr att,
                                                 const float* lse, const AttentionShape& s, const float* cos,
                                                 const float* sin) {
  attention_backward_bf16_rope_rounded(dq, dk, dv, ConstTypedPtr(d_att), q, k, v, att, lse, s, cos, sin);
}

void ModelHooks::embedding(float* x, const int32_t* tokens, const float* E, int N, int C, VocabRange) {
  embedding_forward(x, tokens, E, N, C);
}

void ModelHooks::embedding_backward(float* dE, const float* dx, const int32_t* tokens, int N, int C,
                                    VocabRange vocab) {
  ff::embedding_backward(dE, dx, tokens, N, C, vocab.count);
}

double ModelHooks::loss(float* logits, float* losses, const int32_t* targets, int N, VocabRange vocab,
                        bool with_grad, float grad_scale, TypedPtr grad_rounded) {
  if (with_grad && grad_rounded)  // rounded row by row while each is in cache
    return cross_entropy_forward_backward(logits, losses, targets, N, vocab.count, grad_scale, grad_rounded);
  return with_grad ? cross_entropy_forward_backward(logits, losses, targets, N, vocab.count, grad_scale)
                   : cross_entropy_forward(logits, losses, targets, N, vocab.count);
}

}  // namespace ff
