#include "model/model_config.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ff {

static void require(bool ok, const std::string& msg) {
  if (!ok) throw std::runtime_error("model config: " + msg);
}

void ModelConfig::validate() const {
  require(vocab_size > 0, fmt::format("vocab_size must be positive (got {})", vocab_size));
  require(dim > 0 && n_layers > 0 && n_heads > 0 && n_kv_heads > 0 && ffn_dim > 0 && seq_len > 0,
          fmt::format("dim, n_layers, n_heads, n_kv_heads, ffn_dim and seq_len must be positive "
                      "(got {}, {}, {}, {}, {}, {})",
                      dim, n_layers, n_heads, n_kv_heads, ffn_dim, seq_len));
  require(max_positions == 0 || seq_len <= max_positions,
          fmt::format("seq_len ({}) exceeds the model's context, max_positions = {} (HF max_position_embeddings); "
                      "train on seq_len <= {}",
                      seq_len, max_positions, max_positions));
  require(head_size >= 0, fmt::format("head_dim must be >= 0 (got {}; 0 = dim / n_heads)", head_size));
  require(head_size > 0 || dim % n_heads == 0,
          fmt::format("dim ({}) must be divisible by n_heads ({}); pick dim = n_heads * head_dim, or set "
                      "head_dim",
                      dim, n_heads));
  require(head_dim() % 2 == 0,
          fmt::format("head_dim = {} must be even for rotary embeddings", head_dim()));
  require(n_heads % n_kv_heads == 0,
          fmt::format("n_heads ({}) must be divisible by n_kv_heads ({}) for grouped-query "
                      "attention",
                      n_heads, n_kv_heads));
  require(rms_eps > 0, "rms_eps must be positive");
  require(rope_theta > 0, "rope_theta must be positive");
  const RopeScaling& r = rope_scaling;
  if (r.kind != RopeScalingKind::none)
    require(r.factor >= 1, fmt::format("rope_factor must be >= 1 (got {})", r.factor));
  if (r.kind == RopeScalingKind::llama3)
    require(r.low_freq_factor > 0 && r.high_freq_factor > r.low_freq_factor && r.original_context > 0,
            fmt::format("llama3 rope scaling needs 0 < rope_low_freq_factor < rope_high_freq_factor and "
                        "rope_original_seq_len > 0 (got {}, {}, {})",
                        r.low_freq_factor, r.high_freq_factor, r.original_context));
  moe.validate(n_layers);
}

double training_flops_per_token(const ModelConfig& c) {
  double C = c.dim, D = c.head_dim();
  double attn = C * (c.n_heads * D) + 2.0 * C * (c.n_kv_heads * D) + (c.n_heads * D) * C;
  // The attention term is 12*L*A*s with A = n_heads * head_dim, which is dim unless head_dim is set.
  const double dense_mlp = 3.0 * C * c.ffn_dim;
  // An MoE block runs each token through its router, its top_k routed experts and the shared
  // experts: the other experts' weights are held but take no part in that token's matmuls.
  const double Fe = c.moe.expert_width(c.ffn_dim);
  const double moe_mlp = C * c.moe.n_experts + 3.0 * C * Fe * (c.moe.top_k + c.moe.shared_experts);
  double matmul_params = double(c.vocab_size) * C;
  for (int l = 0; l < c.n_layers; ++l)
    matmul_params += attn + (c.moe.enabled() && c.moe.is_moe_layer(l, c.n_layers) ? moe_mlp : dense_mlp);
  return 6.0 * matmul_params + 12.0 * c.n_layers * double(c.attention_dim()) * c.seq_len;
}

const EnumTable<RopeScalingKind>& rope_scaling_names() {
  static const EnumTable<RopeScalingKind> names{
      {RopeScalingKind::none, "none", "plain theta^(-2i/D)"},
      {RopeScalingKind::linear, "linear", "every frequency / rope_factor"},
      {RopeScalingKind::llama3, "llama3", "Llama 3.1+: long wavelengths / rope_factor, a ramp between"}};
  return names;
}

}  // namespace ff
