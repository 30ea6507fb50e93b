#pragma once
// The serial LLaMA decoder: the spec every parallel layout must reproduce. Forward and backward
// are written out layer by layer (no autograd); gradients accumulate (+=) into a flat buffer laid
// out like the parameters. Parameters and gradients are passed in, not owned, so a parallel
// wrapper can hand in shards or gathered copies.
#include <cstdint>
#include <vector>

#include "core/memory.h"
#include "model/activations.h"
#include "model/model_config.h"
#include "model/param_access.h"
#include "model/parameters.h"
#include "model/tensor_group.h"

namespace ff {

class Llama {
 public:
  // Buffers are sized once for batches of up to max_batch sequences of up to config.seq_len.
  // Under tensor parallelism `slicer` says which block of each tensor this rank holds (the
  // layout and every width follow from it) and `tp` is the group (both outlive the model);
  // both null: the serial model.
  Llama(const ModelConfig& config, int max_batch, Recompute policy,
        const TensorSlicer* slicer = nullptr, TensorGroup* tp = nullptr);

  const ModelConfig& config() const { return cfg_; }
  const ParamLayout& layout() const { return layout_; }
  // This rank's widths (the serial model's without tensor parallelism).
  const BlockWidths& widths() const { return w_; }
  Recompute policy() const { return acts_.policy(); }

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

 private:
  void check_shape(int B, int T) const;
  // Embedding and blocks; leaves the final norm's output in acts_. Rows: B*T.
  void forward_blocks(ParamSource& params, const int32_t* tokens, int B, int T);
  struct HeadParams {
    const float* norm;    // final norm weight (C)
    const float* weight;  // LM head (V, C): its own or, tied, the embedding
  };
  HeadParams acquire_head(ParamSource& params, Pass pass);
  void release_head(ParamSource& params, Pass pass);
  // Final norm over rows [0, first_row + rows), LM head for `rows` rows from first_row, into
  // logits_ (under tensor parallelism: all N rows, this rank's vocabulary columns).
  void head_forward(const HeadParams& h, int first_row, int rows);
  // Sum of token losses from logits_; with_grad: logits_ becomes d(loss)/d(logits) * grad_scale.
  double loss(const int32_t* targets, int N, bool with_grad, float grad_scale);
  // From d(logits) to d_resid_; returns the embedding gradient when tied (kept acquired).
  float* backward_head(const HeadParams& h, GradSink& grads, int N);
  // The tensor-parallel sites (identity in the serial model); see tensor_group.h.
  size_t resid_rows(int N) const { return tp_ ? tp_->resid_rows(size_t(N)) : size_t(N); }
  const float* column_input(const float* x, int N);
  float* column_input_grad(float* d_full, int N);
  const float* row_output_grad(const float* dy, int N);
  // out (R, C) = resid + x (N, in) W^T, the row-parallel GEMM's output summed over the group.
  void row_parallel_residual(float* out, const float* resid, const float* x, const float* W, int N,
                             int in);
  // P: the block's own segment.
  void block_forward(const float* P, int l, float* out, int B, int T);
  void recompute_block(const float* P, int l, int B, int T);
  void backward_blocks(ParamSource& params, GradSink& grads, int B, int T);

  ModelConfig cfg_;
  ParamLayout layout_;
  TensorGroup* tp_;
  BlockWidths w_;                     // this rank's widths
  int heads_, kv_heads_;              // this rank's query and key/value heads
  int vocab_, vocab_first_;           // this rank's vocabulary rows [first, first + vocab_)
  int max_batch_;
  Activations acts_;
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
