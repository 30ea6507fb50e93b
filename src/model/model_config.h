#pragma once
// Shape of a LLaMA-style decoder. Field names follow Hugging Face's LlamaConfig where one exists
// so export and import are a rename, not a translation.
#include <string>

#include "core/enum_table.h"
#include "kernels/rope.h"
#include "model/moe_config.h"

namespace ff {

struct ModelConfig {
  int vocab_size = 0;       // tokens in the tokenizer (HF vocab_size)
  int dim = 0;              // residual width h (HF hidden_size)
  int n_layers = 0;         // decoder blocks (HF num_hidden_layers)
  int n_heads = 0;          // query heads (HF num_attention_heads)
  int n_kv_heads = 0;       // key/value heads, < n_heads for grouped-query attention
  int ffn_dim = 0;          // SwiGLU inner width (HF intermediate_size)
  int seq_len = 0;          // longest sequence trained on
  int max_positions = 0;    // HF max_position_embeddings, the context the model serves; 0 = seq_len
  float rms_eps = 1e-5f;    // HF rms_norm_eps
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;  // HF rope_scaling (Llama 3.1+: llama3; none for most models)
  int head_size = 0;         // HF head_dim where a config sets it; 0 = dim / n_heads
  bool qkv_bias = false;     // a bias on the q, k and v projections (Qwen2 / Qwen2.5)
  bool tied_embeddings = false;  // LM head shares the embedding matrix
  float init_std = 0.02f;   // std of the normal init of matrices (GPT-2 / LLaMA practice)
  MoeConfig moe;            // mixture-of-experts blocks (n_experts 0: none)

  int head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int context_length() const { return max_positions > 0 ? max_positions : seq_len; }
  int attention_dim() const { return n_heads * head_dim(); }  // attention's output width (o's input)
  int qkv_dim() const { return (n_heads + 2 * n_kv_heads) * head_dim(); }
  // Throws with the offending keys and numbers when the shape is inconsistent.
  void validate() const;
};

// Megatron-style FLOPs per trained token: 6 per weight that takes part in a matmul plus the
// attention term 12*L*A*s (PaLM appendix B, with A = n_heads * head_dim, which is h unless head_dim
// is set). The input embedding is a lookup, not a matmul, so it is excluded; the LM head (the same
// matrix when tied) is included. Biases are too few to count. An MoE block counts what one token
// uses: its router, top_k routed experts and the shared experts.
double training_flops_per_token(const ModelConfig& c);

// "none" | "linear" | "llama3": the rope_scaling config key and checkpoint metadata.
const EnumTable<RopeScalingKind>& rope_scaling_names();

}  // namespace ff
