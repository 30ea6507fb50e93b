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
  require(dim % n_heads == 0,
          fmt::format("dim ({}) must be divisible by n_heads ({}); pick dim = n_heads * head_dim",
                      dim, n_heads));
  require(head_dim() % 2 == 0,
          fmt::format("head_dim = dim / n_heads = {} must be even for rotary embeddings",
                      head_dim()));
  require(n_heads % n_kv_heads == 0,
          fmt::format("n_heads ({}) must be divisible by n_kv_heads ({}) for grouped-query "
                      "attention",
                      n_heads, n_kv_heads));
  require(rms_eps > 0, "rms_eps must be positive");
  require(rope_theta > 0, "rope_theta must be positive");
  moe.validate(n_layers);
}

double training_flops_per_token(const ModelConfig& c) {
  double C = c.dim, D = c.head_dim();
  double attn = C * (c.n_heads * D) + 2.0 * C * (c.n_kv_heads * D) + (c.n_heads * D) * C;
  double mlp = 3.0 * C * c.ffn_dim;
  double matmul_params = c.n_layers * (attn + mlp) + double(c.vocab_size) * C;
  return 6.0 * matmul_params + 12.0 * c.n_layers * C * c.seq_len;
}

}  // namespace ff
