// Dumps one forward/backward of a small MoE model for tests/oracle/check_moe_against_torch.py:
// weights, batch, router bias, our logits, loss (with its aux and z parts), every gradient, and
// the routing counts. Two variants cover the options:
//   a: softmax router, top-2 of 4, a shared expert, capacity factor 0.75 (routes are dropped),
//      block 0 dense and block 1 MoE, a nonzero selection bias;
//   b: sigmoid router, top-1 of 4, dropless, every block MoE, expert width != ffn_dim;
//   c: a's model with a loss mask (completion-only loss): about 60% of the targets are -1, the
//      token losses average over the rest while the balancing losses stay a mean over every token;
//   d: b's MoE in the open-model shape (model_fixture.h: q/k/v bias, head_dim 24, llama3 RoPE, a
//      tied head): attention is the dense block's.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model_fixture.h"
#include "oracle_dump_util.h"

using namespace ff;

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: moe_oracle_dump DIR a|b|c|d\n"), 2;
  const std::string dir = argv[1], variant = argv[2];
  const bool masked = variant == "c";
  std::filesystem::create_directories(dir);
  ModelConfig c = variant == "d" ? testkit::small_open_model_config() : testkit::small_gqa_config();
  c.moe.n_experts = 4;
  // Coefficients far above training's so that the balancing terms visibly move every gradient.
  c.moe.aux_loss_coeff = 0.1f;
  c.moe.z_loss_coeff = 0.01f;
  if (variant == "a" || masked) {
    c.moe.top_k = 2, c.moe.expert_ffn_dim = 48, c.moe.shared_experts = 1, c.moe.capacity_factor = 0.75f;
    c.moe.moe_layers = "1";
  } else {
    c.moe.top_k = 1, c.moe.expert_ffn_dim = 40, c.moe.router = RouterKind::sigmoid;
  }
  const int B = 3, T = c.seq_len, N = B * T, E = c.moe.n_experts;
  Llama model(c, B, Recompute::none);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 2024);
  testkit::perturb_norms(params.data(), model.layout(), 5);
  std::vector<float> bias(size_t(c.n_layers) * E, 0.0f);
  if (variant == "a" || masked)
    for (int e = 0; e < E; ++e) model.router_bias(1)[e] = bias[size_t(E + e)] = 0.05f * float(e % 3) - 0.05f;
  auto tokens = testkit::random_tokens(N, c.vocab_size, 11);
  auto targets = testkit::random_tokens(N, c.vocab_size, 12);
  int kept = N;  // the loss targets
  if (masked)
    for (int i = 0; i < N; ++i)
      if ((i * 7) % 5 < 3) targets[size_t(i)] = -1, --kept;
  // As the trainer scales them: token losses by 1 / targets, balancing losses by 1 / tokens.
  const double balance_weight = double(kept) / N;
  model.set_balance_weight(float(balance_weight));

  const float* lp = model.forward_logits(params.data(), tokens.data(), B, T);
  std::vector<float> logits(lp, lp + size_t(N) * c.vocab_size);
  model.moe_stats().reset();
  const double ce = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T,
                                           1.0f / float(kept));
  const MoeStats& st = model.moe_stats();

  nlohmann::json manifest;
  manifest["config"] = testkit::oracle_config_json(c);
  manifest["moe"] = {{"n_experts", E},
                     {"top_k", c.moe.top_k},
                     {"expert_ffn_dim", c.moe.expert_width(c.ffn_dim)},
                     {"shared_experts", c.moe.shared_experts},
                     {"router", router_names().name(c.moe.router)},
                     {"aux_loss_coeff", c.moe.aux_loss_coeff},
                     {"z_loss_coeff", c.moe.z_loss_coeff},
                     {"capacity_factor", c.moe.capacity_factor},
                     {"moe_layers", parse_moe_layers(c.moe.moe_layers, c.n_layers)},
                     {"router_bias", bias}};
  manifest["batch"] = {{"B", B}, {"T", T}};
  manifest["loss"] = (ce + st.loss_sum() * balance_weight) / kept;
  manifest["ce_loss"] = ce / kept;
  for (size_t l = 0; l < st.layers.size(); ++l) {
    const MoeLayerStats& s = st.layers[l];
    if (s.routed.empty()) continue;
    manifest["layers"].push_back({{"layer", l}, {"aux", s.aux_sum / N}, {"z", s.z_sum / N},
                                  {"routed", s.routed}, {"dropped", s.dropped}});
  }
  testkit::write_oracle_dump(dir, manifest, model.layout(), params, grads, tokens, targets, logits);
  std::printf("dumped %zu parameters, loss %.6f (ce %.6f), to %s\n", n, double(manifest["loss"]), ce / kept,
              dir.c_str());
  return 0;
}
