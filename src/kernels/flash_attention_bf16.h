#pragma once
// Flash attention with bf16 operands and fp32 softmax state, as FlashAttention-2 runs in mixed
// precision: the six tile products (Q K^T, P V; backward Q K^T again, dO V^T, dS K, dS^T Q, P^T dO)
// multiply bf16 values and accumulate in fp32 (AVX512-BF16's vdpbf16ps where the CPU has it, in
// the tier picked at run time, kernels/cpu_isa.h; else widened to fp32); the scores, the running
// max and sum, the log-sum-exp, P and dS are fp32, P and dS rounded to bf16 only as the inputs of
// the next product. dq, dk, dv, lse are fp32.
//
// Operands: q, k, v are bf16 (a caller that stores them so) or fp32, which is rounded to bf16
// (nearest even) as the kernel copies it into its tiles: each element once per call and layout,
// bitwise the same as rounding the tensor first, without a second pass over memory. out is
// written fp32 or bf16; the backward reads dout and out in either (their fp32 dot product is
// D_i = rowsum(dO o O)). Strides count elements of the operand's own type. f16 is refused.
//
// Same shapes, layouts, GQA and masks as flash_attention.h (AttentionShape, causal) and
// attention_block.h (AttentionBlock, any mask and positions: the unit context parallelism's
// ring and all-gather attention are built from); the block forms return their FLOPs as those do.
// Scratch: per thread, in the memory ledger's workspace (kernels/scratch.h), sizes below.
#include <cstddef>

#include "core/dtype.h"
#include "kernels/attention_block.h"
#include "kernels/flash_attention.h"

namespace ff {

// How dS enters the dQ and dK products of the backward: two (the default) as two bf16 terms,
// hi + lo (about 16 bits); one rounded once, as FlashAttention-2 does. dq and dk are sums that
// cancel (each row of dS sums to 0), so one rounding of dS is a large error relative to them: over
// 20 steps of `tiny`, a parallel layout's last-bit differences then moved gradient norms by up to
// 2.05e-3 against the serial run (the layout tests' bar is 2e-3), 1.64e-3 with two terms (fp32
// attention: 9.2e-4). Two terms cost two more products of the backward's five (bench_attention
// times both). Training always takes two; benchmarks and tests pass `one` to compare.
enum class DsTerms { two, one };

void attention_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                            const AttentionShape& s);
// Accumulates into dq, dk, dv (q/k/v strides, fp32).
void attention_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                             ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                             const AttentionShape& s, DsTerms ds = DsTerms::two);
// The same (dS as two terms), overwriting dq, dk, dv instead (whatever they held, NaN included):
// the bits of zeroing them and accumulating, without the caller's pass over them and the kernel's
// read of them. Every column of each head's rows is written (D columns per head; padding between
// head blocks of a row is left alone).
void attention_backward_bf16_into(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                  ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                  const AttentionShape& s);
// The same, then q's and k's gradients rotated back by RoPE's backward (rope.h: tables cos, sin
// (T, D/2), position t = the row in its sequence) and all three rounded to bf16 into dq, dk, dv
// (bf16, same strides): bitwise _into followed by rope_backward_rounded, which is what a bf16
// q/k/v GEMM reads, without the fp32 gradient's write and read in between.
void attention_backward_bf16_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, ConstTypedPtr dout,
                                          ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out,
                                          const float* lse, const AttentionShape& s, const float* cos,
                                          const float* sin);

// The FLOPs done are returned, as attention_block.h's block kernels return theirs.
double attention_block_forward_bf16(TypedPtr out, float* lse, ConstTypedPtr q, ConstTypedPtr k, ConstTypedPtr v,
                                    const AttentionBlock& s);
double attention_block_backward_bf16(float* dq, float* dk, float* dv, ConstTypedPtr dout, ConstTypedPtr q,
                                     ConstTypedPtr k, ConstTypedPtr v, ConstTypedPtr out, const float* lse,
                                     const AttentionBlock& s, DsTerms ds = DsTerms::two);

// Floats of per-thread scratch one forward / backward task of the bf16 kernel takes for query
// and key lengths Tq, Tk and head dim D (what the planner's memory model adds).
struct AttentionScratchFloats {
  size_t forward, backward;
};
AttentionScratchFloats attention_bf16_scratch_floats(int Tq, int Tk, int D);

}  // namespace ff
