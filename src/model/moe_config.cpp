#include "model/moe_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

const EnumTable<RouterKind>& router_names() {
  static const EnumTable<RouterKind> names{{RouterKind::softmax, "softmax"}, {RouterKind::sigmoid, "sigmoid"}};
  return names;
}

std::vector<int> parse_moe_layers(const std::string& spec, int n_layers) {
  std::vector<int> layers;
  if (spec == "all" || spec.empty()) {
    for (int l = 0; l < n_layers; ++l) layers.push_back(l);
    return layers;
  }
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int l = -1;
    try {
      l = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || l < 0 || l >= n_layers)
      throw std::runtime_error(fmt::format(
          "config key 'moe_layers' = \"{}\": '{}' is not a block index in [0, {}); write \"all\" or a "
          "comma list such as \"1,3\"", spec, item, n_layers));
    layers.push_back(l);
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

bool MoeConfig::is_moe_layer(int layer, int n_layers) const {
  if (!enabled()) return false;
  const std::vector<int> l = parse_moe_layers(moe_layers, n_layers);
  return std::binary_search(l.begin(), l.end(), layer);
}

void MoeConfig::validate(int n_layers) const {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw std::runtime_error("config: " + msg);
  };
  need(n_experts >= 0, fmt::format("n_experts must be >= 0 (got {}; 0 = a dense model)", n_experts));
  if (!enabled()) return;
  need(top_k >= 1 && top_k <= n_experts,
       fmt::format("top_k ({}) must be between 1 and n_experts ({}); lower top_k or add experts", top_k,
                   n_experts));
  need(expert_ffn_dim >= 0, fmt::format("expert_ffn_dim must be >= 0 (got {}; 0 = ffn_dim)", expert_ffn_dim));
  need(shared_experts >= 0, fmt::format("shared_experts must be >= 0 (got {})", shared_experts));
  need(aux_loss_coeff >= 0 && std::isfinite(aux_loss_coeff),
       fmt::format("aux_loss_coeff must be a number >= 0 (got {}; 1e-2 is usual)", aux_loss_coeff));
  need(z_loss_coeff >= 0 && std::isfinite(z_loss_coeff),
       fmt::format("z_loss_coeff must be a number >= 0 (got {}; 1e-3 is usual)", z_loss_coeff));
  need(router_bias_update >= 0 && std::isfinite(router_bias_update),
       fmt::format("router_bias_update must be a number >= 0 (got {}; 1e-3 is DeepSeek-V3's, 0 = off)",
                   router_bias_update));
  need(capacity_factor == 0 || (capacity_factor > 0 && std::isfinite(capacity_factor)),
       fmt::format("capacity_factor must be > 0 when set (got {}); use 0 for dropless routing or e.g. 1.25",
                   capacity_factor));
  parse_moe_layers(moe_layers, n_layers);
}

}  // namespace ff
