// Dumps one forward/backward of a GQA, untied-head model for tests/oracle/check_against_torch.py:
// the weights, the batch, our logits, our loss and every parameter gradient (--bf16: in bf16).
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
  if (argc < 2 || argc > 4) return std::fprintf(stderr, "usage: oracle_dump DIR [--tied] [--bf16]\n"), 2;
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  ModelConfig c = testkit::small_gqa_config();
  bool bf16 = false;
  for (int i = 2; i < argc; ++i) {
    c.tied_embeddings |= std::string(argv[i]) == "--tied";
    bf16 |= std::string(argv[i]) == "--bf16";
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
