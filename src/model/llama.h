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
#include "model/parameters.h"

namespace ff {

class Llama {
 public:
  // Buffers are sized once for batches of up to max_batch sequences of up to config.seq_len.
  Llama(const ModelConfig& config, int max_batch, Recompute policy);

  const ModelConfig& config() const { return cfg_; }
  const ParamLayout& layout() const { return layout_; }
  Recompute policy() const { return acts_.policy(); }

  // One micro-batch of training: forward, loss, backward. Adds grad_scale * d(sum of token
  // losses)/d(params) into grads; returns the sum of token losses. tokens, targets: (B, T).
  double forward_backward(const float* params, float* grads, const int32_t* tokens,
                          const int32_t* targets, int B, int T, float grad_scale);
  // Sum of token losses without gradients.
  double forward_loss(const float* params, const int32_t* tokens, const int32_t* targets, int B,
                      int T);
  // Logits (B*T, V) for every position; valid until the next call.
  const float* forward_logits(const float* params, const int32_t* tokens, int B, int T);
  // Logits (V) of the last position of one sequence: what sampling needs.
  const float* forward_last_logits(const float* params, const int32_t* tokens, int T);

 private:
  void check_shape(int B, int T) const;
  void forward_blocks(const float* params, const int32_t* tokens, int B, int T);
  void block_forward(const float* params, int l, float* out, int B, int T);
  void recompute_block(const float* params, int l, int B, int T);
  void backward_blocks(const float* params, float* grads, const int32_t* tokens, int B, int T);

  ModelConfig cfg_;
  ParamLayout layout_;
  int max_batch_;
  Activations acts_;
  TrackedBuffer<float> rope_cos_, rope_sin_;  // (T, D/2)
  TrackedBuffer<float> logits_;               // (N, V), then d(loss)/d(logits) in place
  TrackedBuffer<float> losses_;               // (N)
  // Backward scratch, reused by every block.
  TrackedBuffer<float> d_resid_, d_ln_, d_att_, d_qkv_, d_gate_up_, d_h_;
};

}  // namespace ff
