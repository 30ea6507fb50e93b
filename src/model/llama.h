#pragma once
// The serial LLaMA decoder: the spec every parallel layout must reproduce. Forward and backward
// are written out layer by layer (no autograd); gradients accumulate (+=) into a flat buffer laid
// out like the parameters. Parameters and gradients are passed in, not owned, so a parallel
// wrapper can hand in shards or gathered copies.
//
// Files: llama.cpp (construction, whole-model entry points, head and loss), llama_block.cpp (one
// decoder block forward, recompute, backward), llama_chunk.cpp (the pipeline-stage entry points).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "model/activations.h"
#include "model/model_config.h"
#include "model/param_access.h"
#include "model/parameters.h"
#include "model/tensor_group.h"

namespace ff {

// A contiguous run of the model that one pipeline stage executes: decoder blocks
// [first_layer, last_layer), after the embedding if `embedding`, before the final norm, LM head
// and loss if `head`.
struct ModelChunk {
  int first_layer = 0, last_layer = 0;
  bool embedding = false, head = false;
};

// How a chunk's backward runs: whole, or split as zero-bubble schedules want it (Qi et al.
// 2023): `input` computes the gradient flowing to the previous stage and keeps what the weight
// gradients need; `weight` computes the decoder blocks' weight gradients later, off the critical
// path.
enum class BackwardPart { all, input, weight };

// One micro-batch's tokens for a chunk (the first needs tokens, the last targets).
struct MicroBatch {
  const int32_t* tokens = nullptr;   // (B, T)
  const int32_t* targets = nullptr;  // (B, T)
  int B = 0, T = 0;
  float grad_scale = 0;  // d(loss)/d(token loss): 1 / tokens in the global batch
};

class Llama {
 public:
  // Buffers are sized once for batches of up to max_batch sequences of up to config.seq_len.
  // Under tensor parallelism `slicer` says which block of each tensor this rank holds (the
  // layout and every width follow from it) and `tp` is the group (both outlive the model);
  // both null: the serial model. `chunks`: the pipeline chunks this rank runs, in model order;
  // empty = the whole model as one chunk.
  Llama(const ModelConfig& config, int max_batch, Recompute policy,
        const TensorSlicer* slicer = nullptr, TensorGroup* tp = nullptr,
        std::vector<ModelChunk> chunks = {});
  ~Llama();

  const ModelConfig& config() const { return cfg_; }
  const ParamLayout& layout() const { return layout_; }
  // This rank's widths (the serial model's without tensor parallelism).
  const BlockWidths& widths() const { return w_; }
  Recompute policy() const { return policy_; }
  const std::vector<ModelChunk>& chunks() const { return chunks_; }

  // ---- the whole model (one chunk holding everything) ----
  // One micro-batch of training: forward, loss, backward. Adds grad_scale * d(sum of token
  // losses)/d(params) into grads; returns the sum of token losses. tokens, targets: (B, T).
  double forward_backward(ParamSource& params, GradSink& grads, const int32_t* tokens,
                          const int32_t* targets, int B, int T, float grad_scale);
  double forward_backward(const float* params, float* grads, const int32_t* tokens,
                          const int32_t* targets, int B, int T, float grad_scale);
  // Sum of token losses without gradients.
  double forward_loss(ParamSource& params, const int32_t* tokens, const int32_t* targets, int B,
                      int T);
  double forward_loss(const float* params, const int32_t* tokens, const int32_t* targets, int B,
                      int T);
  // Logits (B*T, V) for every position; valid until the next call.
  const float* forward_logits(ParamSource& params, const int32_t* tokens, int B, int T);
  const float* forward_logits(const float* params, const int32_t* tokens, int B, int T);
  // Logits (V) of the last position of one sequence: what sampling needs.
  const float* forward_last_logits(const float* params, const int32_t* tokens, int T);

  // ---- pipeline chunks (llama_chunk.cpp) ----
  // Rows exchanged at a chunk boundary: (R, C), R = resid rows of a (B, T) micro-batch.
  size_t boundary_floats(int B, int T) const;
  // Forward of chunk `chunk` for one micro-batch, keeping its activations in stash `slot`
  // (slots are the caller's: one per micro-batch in flight on this chunk). input: the previous
  // chunk's output, null on the embedding chunk. output: null on the head chunk, which instead
  // computes the loss and at once the head's backward (its (N, V) logits are scratch shared by
  // every micro-batch), accumulating the head's gradients into `grads` and keeping the gradient
  // for the blocks in the slot; returns the loss sum (0 on other chunks). with_grad false: an
  // evaluation forward, no gradients (grads may be any sink; nothing is acquired).
  double chunk_forward(ParamSource& params, GradSink& grads, int chunk, int slot,
                       const float* input, float* output, const MicroBatch& mb, bool with_grad);
  // Backward of the same chunk, micro-batch and slot. grad_output: null on the head chunk.
  // grad_input: the gradient for the previous chunk, null on the embedding chunk (which adds the
  // embedding's gradient instead).
  void chunk_backward(ParamSource& params, GradSink& grads, int chunk, int slot,
                      const float* grad_output, float* grad_input, const MicroBatch& mb,
                      BackwardPart part = BackwardPart::all);

 private:
  // One micro-batch's stash on one chunk, kept from its forward to its backward.
  struct Slot {
    std::unique_ptr<Activations> acts;
    TrackedBuffer<float> head_grad;  // head chunk: gradient of the last block's output (R, C)
    TrackedBuffer<float> deferred;   // BackwardPart::input: what the weight gradients need
    float* tied_emb_grad = nullptr;  // tied head and embedding in one chunk: acquired across
  };
  void check_shape(int B, int T) const;
  // Points the block accessors at chunk `chunk`'s stash `slot` (allocated on first use).
  Slot& select(int chunk, int slot);
  const BlockActs& acts(int layer) const;
  // Embedding lookup into the selected stash's first block input.
  void embed(ParamSource& params, const int32_t* tokens, int N, int first_layer);
  // Blocks [first, last) of the selected stash; the last one writes `out` (R, C).
  void blocks_forward(ParamSource& params, int first, int last, float* out, int B, int T,
                      const ParamSegment& after);
  struct HeadParams {
    const float* norm;    // final norm weight (C)
    const float* weight;  // LM head (V, C): its own or, tied, the embedding
  };
  HeadParams acquire_head(ParamSource& params, const ParamSegment& next);
  void release_head(ParamSource& params);
  // Final norm over rows [0, first_row + rows), LM head for `rows` rows from first_row, into
  // logits_ (under tensor parallelism: all N rows, this rank's vocabulary columns).
  void head_forward(const HeadParams& h, int first_row, int rows);
  // Sum of token losses from logits_; with_grad: logits_ becomes d(loss)/d(logits) * grad_scale.
  double loss(const int32_t* targets, int N, bool with_grad, float grad_scale);
  // From d(logits) to d_resid_; returns the embedding gradient when tied (kept acquired).
  float* backward_head(const HeadParams& h, GradSink& grads, int N);
  void embedding_backward_into(float* emb_grad, const int32_t* tokens, int N);
  // P: the block's own segment.
  void block_forward(const float* P, int l, float* out, int B, int T);
  void recompute_block(const float* P, int l, int B, int T);
  // Blocks last-1 .. first, from d_resid_ (the gradient of block last-1's output) down to the
  // gradient of block first's input, left in d_resid_. `before`: the segment acquired next.
  void blocks_backward(ParamSource& params, GradSink& grads, int first, int last, int B, int T,
                       const ParamSegment& before, BackwardPart part);
  // One block's backward given P and G; part = input stashes the weight GEMMs' output gradients
  // into `deferred` instead of multiplying them out.
  void block_backward(const float* P, float* G, int l, int B, int T, float* deferred);
  // The weight GEMMs that block_backward(input) deferred.
  void block_weight_grads(const float* P, float* G, int l, int B, int T, const float* deferred);
  size_t deferred_floats_per_block(int N) const;
  // The tensor-parallel sites (identity in the serial model); see tensor_group.h.
  size_t resid_rows(int N) const { return tp_ ? tp_->resid_rows(size_t(N)) : size_t(N); }
  const float* column_input(const float* x, int N);
  float* column_input_grad(float* d_full, int N);
  const float* row_output_grad(const float* dy, int N);
  // out (R, C) = resid + x (N, in) W^T, the row-parallel GEMM's output summed over the group.
  void row_parallel_residual(float* out, const float* resid, const float* x, const float* W, int N,
                             int in);

  ModelConfig cfg_;
  std::vector<ModelChunk> chunks_;
  ModelParts parts_;
  ParamLayout layout_;
  TensorGroup* tp_;
  BlockWidths w_;                     // this rank's widths
  int heads_, kv_heads_;              // this rank's query and key/value heads
  int vocab_, vocab_first_;           // this rank's vocabulary rows [first, first + vocab_)
  int max_batch_;
  Recompute policy_;
  std::vector<std::vector<std::unique_ptr<Slot>>> slots_;  // [chunk][slot]
  Slot* slot_ = nullptr;              // the selected stash
  int slot_first_layer_ = 0;
  TrackedBuffer<float> rope_cos_, rope_sin_;  // (T, D/2)
  TrackedBuffer<float> logits_;               // (N, V), then d(loss)/d(logits) in place
  TrackedBuffer<float> losses_;               // (N)
  TrackedBuffer<float> loss_stats_;           // (3N) vocab-parallel row max, sum, target logit
  TrackedBuffer<float> gathered_;             // (N, C) sequence-parallel column input
  TrackedBuffer<float> row_full_;             // (N, C) row-parallel partial output
  // Backward scratch, reused by every block.
  TrackedBuffer<float> d_resid_, d_ln_, d_att_, d_qkv_, d_gate_up_, d_h_;
};

}  // namespace ff
