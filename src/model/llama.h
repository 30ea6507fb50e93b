#pragma once
// The serial LLaMA decoder: the spec every parallel layout must reproduce. Forward and backward
// are written out layer by layer (no autograd), top to bottom in llama_forward_backward.cpp;
// gradients accumulate (+=) into a flat buffer laid out like the parameters. Parameters and
// gradients are passed in, not owned, so a parallel wrapper can hand in shards or gathered
// copies. Every step a parallelism may change goes through ModelHooks (model_hooks.h).
//
// The model owns no per-micro-batch state: activations live in an Activations the caller passes
// (the whole model's own, or a pipeline stage's stash per micro-batch in flight, which
// parallel/pipeline/stage_chunks.h keeps along with the zero-bubble deferred gradients and the
// tied embedding's gradient). Only reusable scratch (logits, backward buffers) is the model's.
//
// Files: llama.cpp (construction, whole-model entry points), llama_forward_backward.cpp (the
// forward and backward), llama_weight_pass.cpp (recompute and the zero-bubble weight pass).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "kernels/gemm_context.h"
#include "model/activations.h"
#include "model/documents.h"
#include "model/model_config.h"
#include "model/model_hooks.h"
#include "model/param_access.h"
#include "model/parameters.h"

namespace ff {

// How a run of blocks' backward goes: whole, or split as zero-bubble schedules want it (Qi et al.
// 2023): `input` computes the gradient flowing to the previous stage and keeps (DeferredGrads)
// what the weight gradients need; `weight` computes the blocks' weight gradients later, off the
// critical path.
enum class BackwardPart { all, input, weight };

// One rank's block widths, read off its (possibly sliced) layout: a tensor-parallel shard of the
// model is the same model with fewer heads, a narrower FFN and a slice of the vocabulary.
BlockWidths local_widths(const ParamLayout& layout, const ModelConfig& c, const ModelParts& parts);

class Llama {
 public:
  // Buffers are sized once for batches of up to max_batch sequences of up to config.seq_len.
  // Under tensor parallelism `slicer` says which block of each tensor this rank holds (the
  // layout and every width follow from it) and `hooks` implement the parallel operations (both
  // outlive the model); null: the serial model. `parts`: the blocks, embedding and head this
  // rank holds (a pipeline stage's); null = the whole model, which then owns its activations.
  // `gemm`: what every GEMM of the model computes (kernels/gemm_context.h), read at each call, so
  // it must outlive the model; null: the default context (fp32), the model's own. The
  // activations only GEMMs read are stored in its input dtype at construction (model/activations.h).
  Llama(const ModelConfig& config, int max_batch, Recompute policy, const TensorSlicer* slicer = nullptr,
        ModelHooks* hooks = nullptr, const ModelParts* parts = nullptr, const GemmContext* gemm = nullptr);
  ~Llama();

  const ModelConfig& config() const { return cfg_; }
  // The context its GEMMs run with, handed to its hooks with every call that runs one.
  const GemmContext& gemm() const { return *gemm_; }
  const ParamLayout& layout() const { return layout_; }
  // This rank's widths (the serial model's without tensor parallelism).
  const BlockWidths& widths() const { return w_; }
  Recompute policy() const { return policy_; }
  // RoPE at the given global positions: row t of every sequence (t < positions.size() <= seq_len)
  // rotates as position positions[t]. Context parallelism hands each rank its chunks of longer
  // sequences, whose tokens sit at positions other than 0, 1, 2, ...
  void set_positions(const std::vector<int>& positions);
  // Document masks in packed rows (model/documents.h): with breaks set, each micro-batch's
  // documents are read off its tokens; attention stays inside a document and RoPE positions
  // restart at each. Unset (the default): one causal sequence per row.
  void set_document_breaks(const DocumentBreaks& breaks);
  // The same with the documents told by `marker` (which outlives the model), for a model that
  // runs on pieces of longer sequences (context parallelism).
  void set_document_marker(const DocumentMarker* marker) { doc_marker_ = marker; }
  bool document_masked() const { return doc_marker_ != nullptr; }
  // Marks acts' rows with the documents of tokens (B, T) and their RoPE tables; nothing without
  // document breaks. The whole-model entry points do it; a pipeline stage does it for each
  // micro-batch's stash, whatever blocks it holds.
  void mark_documents(Activations& acts, const int32_t* tokens, int B, int T) const;
  // Key tiles the document-masked attention visited and skipped, forward and backward, since
  // construction (the caller may reset it).
  AttentionTileCounts& document_tiles() { return doc_tiles_; }
  const AttentionTileCounts& document_tiles() const { return doc_tiles_; }

  // ---- the whole model ----
  // One micro-batch of training: forward, loss, backward. Adds grad_scale * d(sum of token
  // losses)/d(params) into grads; returns the sum of token losses. tokens, targets: (B, T).
  double forward_backward(ParamSource& params, GradSink& grads, const int32_t* tokens,
                          const int32_t* targets, int B, int T, float grad_scale);
  double forward_backward(const float* params, float* grads, const int32_t* tokens,
                          const int32_t* targets, int B, int T, float grad_scale);
  // Sum of token losses without gradients.
  double forward_loss(ParamSource& params, const int32_t* tokens, const int32_t* targets, int B, int T);
  double forward_loss(const float* params, const int32_t* tokens, const int32_t* targets, int B, int T);
  // Logits (B*T, V) for every position; valid until the next call.
  const float* forward_logits(ParamSource& params, const int32_t* tokens, int B, int T);
  const float* forward_logits(const float* params, const int32_t* tokens, int B, int T);
  // Logits (V) of the last position of one sequence: what sampling needs.
  const float* forward_last_logits(const float* params, const int32_t* tokens, int T);

  // ---- mixture of experts ----
  // The routing statistics of the MoE blocks this rank holds since the last reset.
  MoeStats& moe_stats() { return moe_stats_; }
  // Layer l's selection bias (E floats; DeepSeek-V3's aux-loss-free balancing), or null if dense.
  float* router_bias(int layer) {
    return router_bias_.empty() ? nullptr : router_bias_.data() + size_t(layer) * size_t(w_.E);
  }
  // The gradient scale of the balancing losses: forward_backward sets it to its grad_scale times
  // the balance weight; a pipeline stage (which runs no whole forward_backward) sets it per step.
  void set_loss_scale(float s) { loss_scale_ = s; }
  // The balancing losses stay a mean over every routed token while the token losses average over
  // the loss targets alone (a loss mask): their scale is the token losses' times targets / tokens
  // (1 without a mask), as Hugging Face adds a mean router loss to the masked mean.
  void set_balance_weight(float w) { balance_weight_ = w; }
  // How routed tokens reach the experts (expert parallelism); null: this rank holds them all.
  void set_expert_exchange(ExpertExchange* x) { hooks_->set_expert_exchange(x); }

  // ---- runs of the model over caller-owned activations (what a pipeline stage needs) ----
  void check_shape(int B, int T) const;  // throws naming the limits
  // Storage for blocks [first, last) (each shaped by its kind), plus the final norm's tensors if
  // `head`.
  std::unique_ptr<Activations> make_activations(int first, int last, bool head) const;
  // Rows exchanged at a boundary between blocks: (R, C), R = resid rows of a (B, T) micro-batch.
  size_t boundary_floats(int B, int T) const;
  // The gradient of the residual stream (R, C): left by head_forward_backward, read and
  // overwritten by blocks_backward, read by embedding_backward.
  // A caller may write it (a pipeline stage does), so the rounded copy of it that the norms'
  // backward leaves for the next GEMM is no longer trusted once it is handed out.
  float* residual_grad() {
    resid_grad_rounded_ = false;
    return d_resid_.data();
  }
  // Whether the kernels that produce a 16-bit GEMM's output gradient store it rounded themselves
  // (RoPE's and the norms' backward), sparing the GEMM a rounding pass. The bits are the same
  // either way (tested); off only so the test can run both.
  void set_rounding_in_kernels(bool on) { rounding_in_kernels_ = on; }
  // How many backward GEMMs have read an output gradient rounded that way (o, down, q/k/v).
  int64_t rounded_grad_uses() const { return rounded_grad_uses_; }
  // Embedding lookup into acts' first block's input; `first_layer` is that block's.
  void embed(ParamSource& params, Activations& acts, const int32_t* tokens, int N, int first_layer);
  // Blocks [first, last) whose activations are acts' blocks 0 .. last-first-1; the last block
  // writes `out` (R, C). `after`: the segment acquired next (prefetch hint).
  void blocks_forward(ParamSource& params, Activations& acts, int first, int last, float* out, int B,
                      int T, const ParamSegment& after);
  // Final norm, LM head, loss and at once the head's backward (the (N, V) logits are scratch);
  // leaves the gradient of the last block's output in residual_grad(). Returns the loss sum.
  // Tied: *tied_emb_grad is the embedding's gradient, left acquired for embedding_backward.
  double head_forward_backward(ParamSource& params, GradSink& grads, Activations& acts,
                               const int32_t* targets, int N, float grad_scale, const ParamSegment& next,
                               float** tied_emb_grad);
  // The loss sum without gradients.
  double head_loss(ParamSource& params, Activations& acts, const int32_t* targets, int N);
  // Blocks last-1 .. first, from residual_grad() (the gradient of block last-1's output) to the
  // gradient of block first's input, left there. `before`: the segment acquired next. part
  // input/weight: `deferred` holds deferred_floats(last - first, N) floats for the pair.
  void blocks_backward(ParamSource& params, GradSink& grads, Activations& acts, int first, int last, int B,
                       int T, const ParamSegment& before, BackwardPart part, float* deferred);
  size_t deferred_floats(int n_blocks, int N) const;
  // Adds the lookup's gradient (from residual_grad()) into the embedding's and releases it;
  // emb_grad: the tied one kept acquired, or null to acquire it now.
  void embedding_backward(GradSink& grads, float* emb_grad, const int32_t* tokens, int N);

 private:
  struct HeadParams {
    const float* norm;  // final norm weight (C)
    WeightRef weight;   // LM head (V, C): its own or, tied, the embedding
  };
  // Block l's tensor at `offset` in its segment (acquired at P; its gradients at G) as a GEMM
  // operand that knows its parameter (kernels/gemm_precision.h).
  WeightRef block_weight(const float* P, int l, size_t offset) const;
  WeightGradRef block_grad(float* G, int l, size_t offset) const;
  HeadParams acquire_head(ParamSource& params, const ParamSegment& next);
  void release_head(ParamSource& params);
  // Final norm over the rows up to first_row + rows, LM head for `rows` rows from first_row into
  // logits_. Returns the head GEMM's (N, C) input, which head_backward reuses.
  const float* head_forward(const HeadParams& h, Activations& acts, int first_row, int rows);
  float* head_backward(const HeadParams& h, GradSink& grads, Activations& acts, const float* head_in, int N);
  void block_forward(const float* P, int l, const BlockActs& a, float* out, int B, int T);
  void recompute_block(const float* P, int l, const BlockActs& a, int B, int T);
  // The attention core into a.att (the hook stages it through staging_ when its kernel writes fp32).
  void attention_into(const BlockActs& a, int B, int T);
  // def non-null: the input pass of a split backward (G unused).
  void block_backward(const float* P, float* G, int l, const BlockActs& a, int B, int T,
                      const DeferredGrads* def);
  void block_weight_grads(const float* P, float* G, int l, const BlockActs& a, int B, int T,
                          const DeferredGrads& def);
  Activations& whole();  // the whole model's activations; throws on a pipeline stage's part
  MlpCall mlp_call(const float* P, int l, const BlockActs& a, int N);
  AttentionShape attention_shape(const BlockActs& a, int B, int T);
  // RoPE's tables and the (B, T) they are laid out for: the model's (T, D/2) table, or under a
  // document mask the micro-batch's own rows as one sequence of B*T rows.
  struct RopeRows {
    const float *cos, *sin;
    int B, T;
  };
  RopeRows rope_rows(const BlockActs& a, int B, int T) const;
  size_t deferred_floats_per_block(int N) const;
  DeferredGrads deferred_at(float* base, int N) const;
  size_t resid_rows(int N) const { return hooks_->resid_rows(size_t(N)); }
  // The 16-bit type the kernels round GEMM output gradients to in this run, f32 when they do not.
  DType gemm_grad_dtype() const;
  // The type a GEMM rounds an fp32 output gradient to as it reads it (f32: none, or fp8's own
  // scaling): what a bias gradient beside that GEMM rounds the same rows to.
  DType gemm_rounds_grads_to() const;
  // rmsnorm_backward into d_resid_, leaving its rounded copy for the next GEMM when the run has one.
  void norm_backward(float* dw, const float* dy, const float* x, const float* w, const float* rstd, int R);
  // The output gradient of the GEMM reading d_resid next: its rounded copy when that is current.
  ConstTypedPtr resid_grad_for_gemm(const float* dy);
  // RoPE's backward on d_qkv_, and the q/k/v GEMM's output gradient: d_qkv_ itself, or its rounded
  // rows written by the same pass (d_qkv_ then left unrotated) unless keep_f32.
  ConstTypedPtr qkv_grad_for_gemm(const BlockActs& a, int B, int T, bool keep_f32);
  // The attention's backward (d_att_ -> q/k/v) and then qkv_grad_for_gemm, or both in the
  // attention kernel's own last pass where the hooks run the serial bf16 kernel and the GEMM
  // reads a bf16 gradient.
  ConstTypedPtr attention_backward_for_gemm(const BlockActs& a, ConstTypedPtr att, int B, int T, bool keep_f32);
  // Where the loss stores the logits' gradient rounded for the head's GEMMs (null: it does not).
  TypedPtr logits_grad_rounded();

  ModelConfig cfg_;
  GemmContext own_gemm_;      // the default context, for a model given none
  const GemmContext* gemm_;   // the caller's, or own_gemm_
  ModelParts parts_;
  ParamLayout layout_;
  ModelHooks serial_hooks_;
  ModelHooks* hooks_;
  BlockWidths w_;                     // this rank's widths
  int heads_, kv_heads_;              // this rank's query and key/value heads
  VocabRange vocab_;                  // this rank's vocabulary rows
  int max_batch_;
  Recompute policy_;
  DType act_dtype_;                           // of the activations only GEMMs read
  std::unique_ptr<Activations> whole_;        // the whole model's activations (parts null)
  TrackedBuffer<float> rope_cos_, rope_sin_;  // (T, D/2)
  std::unique_ptr<RowDocumentMarker> row_marker_;  // set_document_breaks's
  const DocumentMarker* doc_marker_ = nullptr;      // null: no document mask
  AttentionTileCounts doc_tiles_;
  TrackedBuffer<float> logits_;               // (N, V), then d(loss)/d(logits) in place
  TrackedBuffer<float> logits_grad16_;        // 16-bit runs: that gradient rounded, (N, V) 16-bit
  TrackedBuffer<float> losses_;               // (N)
  // Backward scratch, reused by every block.
  TrackedBuffer<float> d_resid_, d_ln_, d_att_, d_qkv_, d_gate_up_, d_h_;
  // In a 16-bit run the rounded copy of d_resid_ lives in d_qkv_ (free from one norm's backward to
  // the GEMM after it) and the rounded q/k/v gradient in d_gate_up_ (free once gate/up's backward
  // is done): no new buffer. resid_grad_rounded_: the copy matches d_resid_ now.
  bool rounding_in_kernels_ = true, resid_grad_rounded_ = false;
  int64_t rounded_grad_uses_ = 0;
  // A 16-bit run's fp32 staging (N, max(A, 2F)): the gate/up GEMM's output before SwiGLU rounds it
  // into its kept tensor; an fp32-only attention's output, and in backward its widened att.
  TrackedBuffer<float> staging_;
  // MoE blocks: routing statistics, selection bias (n_layers x E), backward scratch, the loss
  // terms' gradient scale, and the current block's expert parameters and gradients (set where a
  // block's segments are acquired, read by mlp_call).
  MoeStats moe_stats_;
  std::vector<float> router_bias_;
  TrackedBuffer<float> moe_scratch_;
  float loss_scale_ = 0;
  float balance_weight_ = 1;
  const float* experts_ = nullptr;
  float* expert_grads_ = nullptr;
};

}  // namespace ff
