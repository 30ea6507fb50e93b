#pragma once
// Workspace bytes the memory model adds for context parallelism, mixture of experts / expert
// parallelism and low-precision GEMMs, each mirroring the buffers its code allocates (named at
// each term), and the bytes per element of the precision-dependent copies in ONE place.
#include <cstdint>

#include "model/activations.h"
#include "model/model_config.h"
#include "plan/layout_spec.h"

namespace ff {

// Bytes per element the engine stores under a GEMM precision. Today every weight, gradient and
// activation is fp32 whatever `precision` says (bf16 rounds GEMM inputs into scratch); a bf16
// weight copy or bf16 activations change these numbers and nothing else in the planner.
struct PrecisionBytes {
  int weight_copy = 0;   // a low-precision copy of the weights, bytes per parameter (none today)
  int activation = 4;    // bytes per kept activation element
  int gemm_input = 4;    // bytes per converted GEMM operand element (the per-thread scratch)
};
PrecisionBytes precision_bytes(Precision p);

// ContextAttention's buffers (parallel/context): ring and all-gather K/V pieces, partial outputs
// and dK/dV accumulators; Ulysses' all-to-all send/receive and whole-sequence tensors. Bytes.
int64_t context_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w);
// An MoE block's backward scratch (moe_scratch_floats, once per rank) and the ep exchange's
// staging (AllToAllExperts). Bytes; 0 without MoE blocks.
int64_t moe_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w, bool has_moe);
// The calling thread's scratch of converted GEMM operands (gemm_run_precision): the largest
// (A padded to 32 elements) + B over the rank's linears, forward, dgrad and wgrad. Bytes; 0 at fp32.
int64_t gemm_input_scratch_bytes(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t R, int64_t vocab,
                                 bool head, bool has_moe);

}  // namespace ff
