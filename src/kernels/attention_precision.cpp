#include "kernels/attention_precision.h"

#include "kernels/flash_attention_bf16.h"

namespace ff {

bool attention_runs_bf16(const GemmContext& g) { return g.input_dtype == DType::bf16 && !g.fp8; }

void attention_forward_run_precision(const GemmContext& g, float* out, float* lse, const float* q, const float* k,
                                     const float* v, const AttentionShape& s) {
  if (attention_runs_bf16(g)) return attention_forward_bf16(out, lse, q, k, v, s);
  attention_forward(out, lse, q, k, v, s);
}

void attention_backward_run_precision(const GemmContext& g, float* dq, float* dk, float* dv, const float* dout,
                                      const float* q, const float* k, const float* v, const float* out,
                                      const float* lse, const AttentionShape& s) {
  if (attention_runs_bf16(g)) return attention_backward_bf16(dq, dk, dv, dout, q, k, v, out, lse, s);
  attention_backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}

double attention_block_forward_run_precision(const GemmContext& g, float* out, float* lse, const float* q,
                                             const float* k, const float* v, const AttentionBlock& s) {
  if (attention_runs_bf16(g)) return attention_block_forward_bf16(out, lse, q, k, v, s);
  return attention_block_forward(out, lse, q, k, v, s);
}

double attention_block_backward_run_precision(const GemmContext& g, float* dq, float* dk, float* dv,
                                              const float* dout, const float* q, const float* k, const float* v,
                                              const float* out, const float* lse, const AttentionBlock& s) {
  if (attention_runs_bf16(g)) return attention_block_backward_bf16(dq, dk, dv, dout, q, k, v, out, lse, s);
  return attention_block_backward(dq, dk, dv, dout, q, k, v, out, lse, s);
}

}  // namespace ff
