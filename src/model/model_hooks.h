#pragma once
// The operations of the model that a parallelism may change, each beside its backward dual. The
// serial model (llama_forward_backward.cpp) calls a hook at every such step, and ModelHooks
// itself is the serial computation. A parallelism changes the operations it needs and nothing
// else: tensor parallelism subclasses the hooks (parallel/tensor/tensor_hooks.h) for the column
// input, row output, embedding and loss, with Megatron's regions; context parallelism sets
// `attention_op`, an AttentionOp (ring, all-gather or all-to-all attention over its group,
// parallel/context/context_attention.h), on whichever hooks the run uses; expert parallelism is
// the MoE MLP's ExpertExchange delegate (all-to-all dispatch to the experts,
// parallel/expert/all_to_all_experts.h). The model never calls a collective and has no branch on
// a parallelism (principles 3, 6 and 15, docs/principles.md).
//
// The hooks that run GEMMs or attention are handed the model's GEMM context (Llama::gemm(): the
// run's precision, fp8 scaling, weight twins), as an argument or in the MlpCall.
//
// Rows: N = the micro-batch's tokens; R = resid_rows(N), the residual-stream rows this rank holds
// (N, or its N/t chunk under sequence parallelism: rows [rank * R, rank * R + R)).
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "kernels/flash_attention.h"
#include "kernels/gemm_context.h"
#include "kernels/gemm_precision.h"
#include "model/activations.h"
#include "model/expert_exchange.h"
#include "model/moe_stats.h"
#include "model/parameters.h"

namespace ff {

// The vocabulary rows [first, first + count) this rank's embedding and LM head hold.
struct VocabRange {
  int first = 0, count = 0;
};

// One block's MLP sub-layer: out (R, C) = mid + mlp(ln2), reading ln2 and mid from `a` and
// keeping what its backward needs in a->mlp.
struct MlpCall {
  const GemmContext* gemm;  // the model's: what its GEMMs compute
  const float* P;           // the block's parameters (its segment)
  const BlockOffsets* o;    // where its tensors are in P
  const BlockActs* a;
  int N, C, F;              // F: this rank's FFN width
  float *d_h, *d_gate_up;   // backward scratch (N, F), (N, 2F)
  float* staging = nullptr;  // (N, 2F) fp32 gate/up output before its rounding into a 16-bit a->mlp.gate_up
  // The output gradient (R, C) of the block, rounded by the norm backward that made it (null:
  // none; read only while row_output_backward leaves d_resid where it is).
  ConstTypedPtr d_resid_rounded = ConstTypedPtr();
  int64_t* rounded_grad_uses = nullptr;  // counts the GEMMs that read d_resid_rounded (tests)
  bool round_in_kernels = true;  // SwiGLU rounds the staged gate_up as it reads it (false: a separate pass)
  // MoE blocks only (model/moe_mlp.cpp):
  const float* PE = nullptr;           // this rank's routed experts (the layer's expert segment)
  float* GE = nullptr;                 // their gradients (backward with weights)
  const MoeConfig* moe = nullptr;
  const BlockWidths* w = nullptr;      // E, K, Fe, Fs, EP
  const float* router_bias = nullptr;  // (E) selection-only bias, or null
  MoeLayerStats* stats = nullptr;      // the step's routing statistics of this layer
  float loss_scale = 0;                // gradient scale of the balancing losses (the CE's)
  float* moe_scratch = nullptr;        // backward scratch, moe_scratch_floats(w, N)
  // Where P and PE start in the model's flat parameter layout: their tensors' identity.
  int64_t at = -1, experts_at = -1;

  // The block's tensor at `offset` in P (expert_*: in PE) as a GEMM operand that knows its
  // parameter (kernels/gemm_precision.h), and its gradient in G (GE).
  WeightRef weight(size_t offset) const { return {P + offset, at + int64_t(offset)}; }
  WeightGradRef grad(float* G, size_t offset) const { return {G + offset, at + int64_t(offset)}; }
  WeightRef expert_weight(size_t offset) const { return {PE + offset, experts_at + int64_t(offset)}; }
  WeightGradRef expert_grad(size_t offset) const { return {GE + offset, experts_at + int64_t(offset)}; }
};

// What the input pass of a zero-bubble split keeps for the weight pass, per block: the output
// gradients of the four weight GEMMs (down (N, C), gate/up (N, 2F), o (N, C), q/k/v (N, Q)) and
// the two norm weights' gradients (2C: attention norm, MLP norm), computed at once but added to
// the sink with the rest. The GEMM inputs are the stashed (or recomputed) activations.
struct DeferredGrads {
  float *d_out, *d_gate_up, *d_mid, *d_qkv, *norms;
};

// The attention core as a replaceable operation: context parallelism supplies one (ring,
// all-gather or all-to-all attention over its group) and hands it to whichever hooks the run
// uses, serial or tensor-parallel, so the two parallelisms compose instead of competing for one
// subclass. Same contract as ModelHooks::attention and its backward.
class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  virtual void forward(const GemmContext& g, float* att, float* lse, const float* q, const float* k,
                       const float* v, const AttentionShape& s) = 0;
  virtual void backward(const GemmContext& g, float* dq, float* dk, float* dv, const float* d_att,
                        const float* q, const float* k, const float* v, const float* att, const float* lse,
                        const AttentionShape& s) = 0;
};

class ModelHooks {
 public:
  ModelHooks() = default;
  ModelHooks(const ModelHooks&) = delete;  // experts_ may point into this object
  ModelHooks& operator=(const ModelHooks&) = delete;
  // Null: the serial flash kernel. Set: attention() and attention_backward() call it.
  AttentionOp* attention_op = nullptr;

  virtual ~ModelHooks() = default;
  virtual size_t resid_rows(size_t N) const { return N; }
  // The first of this rank's residual-stream rows (rank * R under sequence parallelism).
  virtual size_t resid_row0(size_t /*N*/) const { return 0; }
  // Ranks whose column_input_backward contributions are summed (tp). A computation every one of
  // them repeats whole (an MoE block: its experts are replicated over tp) hands in 1/this each.
  virtual int column_ranks() const { return 1; }
  // Throws, naming the fix, when a (B, T) batch cannot be split as the parallelism needs.
  virtual void check_batch(int /*B*/, int /*T*/) const {}
  // Scratch for batches of up to max_rows tokens of residual width C; the model calls it once.
  virtual void reserve(size_t /*max_rows*/, int /*C*/) {}

  // Input of a column-parallel GEMM: x (R, width) -> (N, width), valid until the next call, in
  // x's type (a 16-bit activation is gathered as it is stored: half the bytes).
  virtual ConstTypedPtr column_input(ConstTypedPtr x, size_t /*N*/, int /*width*/) { return x; }
  // Dual: d_full (N, width), this rank's part of the input gradient -> where the (R, width)
  // rows of the whole gradient are (summed in place).
  virtual float* column_input_backward(float* d_full, size_t /*N*/, int /*width*/) { return d_full; }

  // A row-parallel GEMM and the residual: out (R, C) = resid + x (N, in) W^T, W (C, in); x may be a
  // 16-bit activation.
  virtual void row_output(const GemmContext& g, float* out, const float* resid, ConstTypedPtr x, WeightRef W,
                          int N, int in, int C);
  // Dual: dy (R, C) -> the (N, C) gradient of the GEMM's output.
  virtual const float* row_output_backward(const float* dy, size_t /*N*/, int /*C*/) { return dy; }

  // Causal attention: att (N, A) in its stored type, lse (B, H, T) from q, k, v (strided rows of
  // the fused qkv). The bf16 kernel writes a bf16 att itself; an attention that writes fp32 only
  // (context parallelism's, fp16's) goes through `staging` ((N, A) fp32) and is rounded after.
  virtual void attention(const GemmContext& g, TypedPtr att, float* lse, const float* q, const float* k,
                         const float* v, const AttentionShape& s, float* staging);
  // Dual: accumulates into dq, dk, dv, or overwrites them where attention_backward_overwrites()
  // (the caller zeroes them only otherwise); att read as stored (widened into `staging` for an
  // fp32-only one).
  virtual void attention_backward(const GemmContext& g, float* dq, float* dk, float* dv, const float* d_att,
                                  const float* q, const float* k, const float* v, ConstTypedPtr att,
                                  const float* lse, const AttentionShape& s, float* staging);
  // The serial bf16 kernel writes every element of dq, dk, dv once, so it overwrites them (a
  // hook returning false makes it add to them, zeroed by the caller: the test's reference). True
  // also tells the model that the hooks' attention backward is that kernel, so that it may call
  // attention_backward_rope_rounded instead (model/llama_rounded_grads.cpp).
  virtual bool attention_backward_overwrites(const GemmContext& g) const;
  // That kernel with RoPE's backward and the rounding for a bf16 q/k/v GEMM fused into its last
  // pass: dq, dk, dv (bf16, q/k/v strides) overwritten with q's and k's gradients rotated back
  // (tables cos, sin (T, D/2)) and v's, all rounded. Called only where
  // attention_backward_overwrites(); att as stored.
  virtual void attention_backward_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, const float* d_att,
                                               const float* q, const float* k, const float* v, ConstTypedPtr att,
                                               const float* lse, const AttentionShape& s, const float* cos,
                                               const float* sin);

  // The MLP sub-layer (out null: only the tensors its backward needs, for recomputation).
  virtual void mlp(const MlpCall& m, float* out) {
    if (m.o->kind == BlockKind::moe) moe_mlp_forward(*this, m, out);
    else dense_mlp_forward(*this, m, out);
  }
  // Dual: from d_resid (R, C), the gradient of out, leaves this rank's part of ln2's gradient in
  // d_ln (N, C); weight gradients are added into G (the block's segment) or, deferred, their
  // GEMMs' output gradients stashed in *def.
  virtual void mlp_backward(const MlpCall& m, const float* d_resid, float* d_ln, float* G,
                            const DeferredGrads* def) {
    if (m.o->kind == BlockKind::moe) moe_mlp_backward(*this, m, d_resid, d_ln, G, def);
    else dense_mlp_backward(*this, m, d_resid, d_ln, G, def);
  }
  // The weight GEMMs mlp_backward deferred.
  virtual void mlp_weight_grads(const MlpCall& m, float* G, const DeferredGrads& def) {
    if (m.o->kind == BlockKind::moe) throw std::logic_error("MoE blocks have no zero-bubble weight pass");
    dense_mlp_weight_grads(*this, m, G, def);
  }

  // The MLP delegate of MoE blocks: how routed tokens reach the experts (the identity serially;
  // expert parallelism's all-to-all). Not owned; null restores the serial one.
  void set_expert_exchange(ExpertExchange* x) { experts_ = x ? x : &local_experts_; }
  ExpertExchange& expert_exchange() { return *experts_; }

  // Embedding lookup: x (R, C) = rows `tokens` (N) of E (the `vocab` rows this rank holds).
  virtual void embedding(float* x, const int32_t* tokens, const float* E, int N, int C, VocabRange vocab);
  // Dual: adds dx (R, C) into dE's rows.
  virtual void embedding_backward(float* dE, const float* dx, const int32_t* tokens, int N, int C,
                                  VocabRange vocab);

  // Sum of the N token losses from logits (N, vocab.count), losses (N) per token. with_grad: its
  // dual fused in, logits become grad_scale * d(loss)/d(logits) in place, and grad_rounded (16-bit
  // (N, vocab.count), unless null) that gradient rounded, for a 16-bit LM head's GEMMs.
  virtual double loss(float* logits, float* losses, const int32_t* targets, int N, VocabRange vocab,
                      bool with_grad, float grad_scale, TypedPtr grad_rounded);

 protected:
  // The dense MLP (llama_forward_backward.cpp), through this object's column and row hooks.
  static void dense_mlp_forward(ModelHooks& h, const MlpCall& m, float* out);
  static void dense_mlp_backward(ModelHooks& h, const MlpCall& m, const float* d_resid, float* d_ln, float* G,
                                 const DeferredGrads* def);
  static void dense_mlp_weight_grads(ModelHooks& h, const MlpCall& m, float* G, const DeferredGrads& def);
  // The MoE block (moe_mlp.cpp): router, dispatch, the local experts, combine, shared experts.
  static void moe_mlp_forward(ModelHooks& h, const MlpCall& m, float* out);
  static void moe_mlp_backward(ModelHooks& h, const MlpCall& m, const float* d_resid, float* d_ln, float* G,
                               const DeferredGrads* def);

 private:
  ExpertExchange local_experts_;
  ExpertExchange* experts_ = &local_experts_;
};

// Floats of backward scratch an MoE block of widths w needs for N tokens.
size_t moe_scratch_floats(const BlockWidths& w, size_t N);

}  // namespace ff
