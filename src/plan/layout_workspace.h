#pragma once
// Workspace bytes the memory model adds for context parallelism, mixture of experts / expert
// parallelism and low-precision GEMMs, each mirroring the buffers its code allocates (named at
// each term), and the bytes per element of the precision-dependent copies in ONE place.
#include <cstdint>

#include "model/activations.h"
#include "model/model_config.h"
#include "model/parameters.h"
#include "plan/engine_host.h"
#include "plan/layout_spec.h"

namespace ff {

// Bytes per element the engine stores under a GEMM precision. Gradients and activations are fp32
// whatever `precision` says; bf16/fp16 keep a 16-bit copy of the weights rounded once per step
// (kernels/weight_copy; none under ZeRO-3, whose gathers are fp32 by default, nor for fp8) and round
// the activation operand into scratch. bf16 activations would change these numbers and nothing else.
struct PrecisionBytes {
  int weight_copy = 0;   // the 16-bit weight copy, bytes per parameter the rank holds unsharded
  int gemm_input = 4;    // bytes per converted GEMM operand element (the per-thread scratch)
};
PrecisionBytes precision_bytes(Precision p);
// Whether the run keeps that copy (train/parallelize.cpp's make_weight_copy): ZeRO-3 over more than one rank reads its
// (fp32) gathered buffers instead.
bool has_weight_copy(const LayoutSpec& L);
// The copy's packed twins (kernels/packed_weights.h), where oneDNN runs the 16-bit products: each
// weight a forward or input-gradient product reads (every matrix but an untied token embedding)
// once per product kind, 2 bytes per element padded to oneDNN's blocks. Bytes; 0 without a copy,
// where the host's 16-bit GEMMs are emulated or on the tile GEMM, or with packed weights switched off.
int64_t packed_weight_bytes(const ParamLayout& layout, const ModelConfig& c, const LayoutSpec& L,
                            const EngineHost& host);

// Floats of per-thread scratch one flash-attention forward / backward task takes at the model's
// sequence length: the fp32 kernels' (flash_attention.cpp), or the bf16 kernels' when the run's
// precision is bf16 (kernels/attention_precision.h picks them; flash_attention_bf16.h sizes them).
struct AttentionScratch {
  int64_t forward, backward;
};
AttentionScratch attention_scratch_floats(const ModelConfig& c, Precision p);

// ContextAttention's buffers (parallel/context): ring and all-gather K/V pieces, partial outputs
// and dK/dV accumulators; Ulysses' all-to-all send/receive and whole-sequence tensors. Bytes.
int64_t context_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w);
// An MoE block's backward scratch (moe_scratch_floats, once per rank) and the ep exchange's
// staging (AllToAllExperts). Bytes; 0 without MoE blocks.
int64_t moe_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w, bool has_moe);
// The calling thread's scratch of converted GEMM operands (gemm_run_precision): the largest
// (A padded to 32 elements) + B over the rank's linears, forward, dgrad and wgrad, less the
// activations stored 16-bit already (ln1, att, ln2, h: model/activations.h). Bytes; 0 at fp32.
int64_t gemm_input_scratch_bytes(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t R, int64_t vocab,
                                 bool head, bool has_moe);
// Where oneDNN has no 16-bit matmul for the host's CPU (bf16 emulated: kernels/cpu_isa.h), every 16-bit
// product widens both its operands to fp32 in the calling thread's float scratch
// (gemm_mixed.cpp's widen_and_multiply), the buffer flash attention also uses: the largest
// A + B over the rank's linears, forward, dgrad and wgrad. Floats; 0 at fp32 or where oneDNN
// multiplies 16-bit operands itself. The routed experts' products (rows vary by step) are left out.
int64_t emulated_widen_floats(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t vocab, bool head,
                              bool has_moe, const EngineHost& host);
// Where the bf16 GEMMs run on fivefold's tile GEMM (host.tile_gemm), each product packs op(B), and
// op(A) where it cannot read it in place, into the calling thread's 32-bit scratch (gemm_amx.cpp's
// multiply): the largest over the rank's linears, forward, dgrad and wgrad (which packs dy and x
// whole: 2 bytes per element of each, padded to tiles). Bytes; 0 elsewhere. The routed experts'
// products (rows vary by step) are left out.
int64_t tile_gemm_scratch_bytes(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t vocab, bool head,
                                bool has_moe, const EngineHost& host);

}  // namespace ff
