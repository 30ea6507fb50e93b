// Dumps one forward/backward of a GQA, untied-head model for tests/oracle/check_against_torch.py:
// the weights, the batch, our logits, our loss and every parameter gradient (--bf16: in bf16).
// Options turn on a tied head, Qwen2's q/k/v bias, a head_dim other than dim / n_heads and a RoPE
// scaling.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/gemm_context.h"
#include "model_fixture.h"
#include "oracle_dump_util.h"

using namespace ff;

int main(int argc, char** argv) {
  const char* usage =
      "usage: oracle_dump DIR [--tied] [--bf16] [--qkv-bias] [--head-dim=D] [--rope=linear|llama3]\n";
  if (argc < 2) return std::fprintf(stderr, "%s", usage), 2;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  ModelConfig c = testkit::small_gqa_config();
  bool bf16 = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tied") c.tied_embeddings = true;
    else if (a == "--bf16") bf16 = true;
    else if (a == "--qkv-bias") c.qkv_bias = true;
    else if (a.rfind("--head-dim=", 0) == 0) c.head_size = std::stoi(a.substr(11));
    else if (a == "--rope=linear") c.rope_scaling = {RopeScalingKind::linear, 4.0f};
    // Wavelengths 2 pi theta^(2i/D) against 64 / 4 and 64 / 1: at head_dim 16 or 24 some pairs are
    // kept, some interpolated and the rest divided by the factor.
    else if (a == "--rope=llama3") c.rope_scaling = {RopeScalingKind::llama3, 8.0f, 1.0f, 4.0f, 64};
    else return std::fprintf(stderr, "oracle_dump: unknown option %s\n%s", a.c_str(), usage), 2;
  }
  // --bf16: the model's GEMMs read bf16 inputs (precision = bf16), checked against the same
  // float64 oracle at a bf16 tolerance.
  const GemmContext precision{.input_dtype = bf16 ? DType::bf16 : DType::f32};
  const int B = 3, T = c.seq_len, N = B * T;
  Llama model(c, B, Recompute::none, nullptr, nullptr, nullptr, &precision);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 2024);
  testkit::perturb_norms(params.data(), model.layout(), 5);
  auto tokens = testkit::random_tokens(N, c.vocab_size, 11);
  auto targets = testkit::random_tokens(N, c.vocab_size, 12);

  const float* lp = model.forward_logits(params.data(), tokens.data(), B, T);
  std::vector<float> logits(lp, lp + size_t(N) * c.vocab_size);
  double loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(),
                                       B, T, 1.0f / N) / N;

  nlohmann::json manifest;
  manifest["config"] = testkit::oracle_config_json(c);
  manifest["batch"] = {{"B", B}, {"T", T}};
  manifest["loss"] = loss;
  testkit::write_oracle_dump(dir, manifest, model.layout(), params, grads, tokens, targets, logits);
  std::printf("dumped %zu parameters, loss %.6f, to %s\n", n, loss, dir.c_str());
  return 0;
}
