#pragma once
// The mixture-of-experts part of a model's shape (Mixtral / Qwen-MoE / DeepSeek-V3 style): which
// blocks replace their dense MLP with routed experts, how tokens are routed, and the
// load-balancing terms. n_experts = 0 (the default) is the dense model, unchanged.
#include <string>
#include <vector>

#include "core/enum_table.h"

namespace ff {

enum class RouterKind { softmax, sigmoid };
const EnumTable<RouterKind>& router_names();

struct MoeConfig {
  int n_experts = 0;              // routed experts per MoE block; 0 = every block dense
  int top_k = 2;                  // experts each token is sent to
  int expert_ffn_dim = 0;         // SwiGLU width of one expert; 0 = ffn_dim
  std::string moe_layers = "all"; // "all" or a comma list of block indices ("1,3"); others dense
  int shared_experts = 0;         // always-active experts (one SwiGLU of shared_experts x width)
  RouterKind router = RouterKind::softmax;  // softmax | sigmoid scores
  float aux_loss_coeff = 1e-2f;   // Switch load-balancing loss coeff * E * sum_i f_i P_i
  float z_loss_coeff = 1e-3f;     // router z-loss coeff * mean(logsumexp(logits)^2)
  float router_bias_update = 0;   // DeepSeek-V3 aux-loss-free bias step per optimizer step; 0 = off
  float capacity_factor = 0;      // 0 = dropless; else each expert takes ceil(cf * N * k / E) tokens

  bool enabled() const { return n_experts > 0; }
  // Whether block `layer` of n_layers is an MoE block.
  bool is_moe_layer(int layer, int n_layers) const;
  int expert_width(int ffn_dim) const { return expert_ffn_dim > 0 ? expert_ffn_dim : ffn_dim; }
  // Throws naming the key and the fix: bad counts, top_k > n_experts, a capacity factor <= 0 when
  // set, a moe_layers entry outside [0, n_layers).
  void validate(int n_layers) const;
};

// The block indices moe_layers names (all of [0, n_layers) for "all"); throws naming the key.
std::vector<int> parse_moe_layers(const std::string& spec, int n_layers);

}  // namespace ff
