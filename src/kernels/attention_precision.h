#pragma once
// The attention kernels a run uses, chosen by its GEMM context (gemm_context.h) the way
// gemm_precision.h chooses the GEMMs: with bf16 GEMM inputs (`precision = bf16`) attention runs the
// bf16 kernels of flash_attention_bf16.h (bf16 tile products, fp32 softmax state), otherwise the
// fp32 kernels unchanged, bitwise. fp16 and fp8 keep fp32 attention: fp16's range would need the
// scores scaled (its largest value is 65504) and no test here shows it right; fp8 emulates only the
// linears. Same signatures and contracts as flash_attention.h and attention_block.h, after the
// context.
#include "kernels/attention_block.h"
#include "kernels/flash_attention.h"
#include "kernels/gemm_context.h"

namespace ff {

// Whether attention runs in bf16 under this context (bf16 GEMM inputs, not fp8).
bool attention_runs_bf16(const GemmContext& g);

void attention_forward_run_precision(const GemmContext& g, float* out, float* lse, const float* q, const float* k,
                                     const float* v, const AttentionShape& s);
void attention_backward_run_precision(const GemmContext& g, float* dq, float* dk, float* dv, const float* dout,
                                      const float* q, const float* k, const float* v, const float* out,
                                      const float* lse, const AttentionShape& s);
// The block forms return the FLOPs done, as attention_block.h's do.
double attention_block_forward_run_precision(const GemmContext& g, float* out, float* lse, const float* q,
                                             const float* k, const float* v, const AttentionBlock& s);
double attention_block_backward_run_precision(const GemmContext& g, float* dq, float* dk, float* dv,
                                              const float* dout, const float* q, const float* k, const float* v,
                                              const float* out, const float* lse, const AttentionBlock& s);

}  // namespace ff
