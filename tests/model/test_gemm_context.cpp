// What a model's GEMMs compute is its own GEMM context, not a setting of the process: an fp32 and a
// bf16 model side by side in one process, their steps interleaved, each give bitwise what they
// give alone, and differ from each other (the bf16 one really rounds); a model given no context
// is the fp32 one.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/gemm_context.h"
#include "model_fixture.h"

using namespace ff;

namespace {

struct Pass {
  double loss;
  std::vector<float> grads;
};

// One micro-batch of `model` over fixed parameters and tokens.
Pass step(Llama& model, const std::vector<float>& params, int B, int T) {
  const ModelConfig& c = model.config();
  const auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  const auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  Pass p{0, std::vector<float>(params.size(), 0.0f)};
  p.loss = model.forward_backward(params.data(), p.grads.data(), tokens.data(), targets.data(), B, T, 1.0f / (B * T));
  return p;
}

bool bitwise(const Pass& a, const Pass& b) { return testkit::same_bits(a.loss, a.grads, b.loss, b.grads); }

}  // namespace

TEST(GemmContext, TwoModelsWithTwoContextsComputeEachTheirOwnWay) {
  const ModelConfig c = testkit::small_gqa_config();
  const int B = 2, T = c.seq_len;
  const GemmContext fp32, bf16{.input_dtype = DType::bf16};
  Llama plain(c, B, Recompute::none, nullptr, nullptr, nullptr, &fp32);
  Llama rounded(c, B, Recompute::none, nullptr, nullptr, nullptr, &bf16);
  std::vector<float> params(plain.layout().total());
  init_parameters(params.data(), plain.layout(), c, 9);
  testkit::perturb_norms(params.data(), plain.layout(), 3);

  const Pass fp32_alone = step(plain, params, B, T), bf16_alone = step(rounded, params, B, T);
  // Interleaved: neither model's context leaks into the other's steps.
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(bitwise(step(rounded, params, B, T), bf16_alone)) << "round " << round;
    EXPECT_TRUE(bitwise(step(plain, params, B, T), fp32_alone)) << "round " << round;
  }
  EXPECT_FALSE(bitwise(fp32_alone, bf16_alone));

  Llama given_none(c, B, Recompute::none);
  EXPECT_EQ(given_none.gemm().input_dtype, DType::f32);
  EXPECT_TRUE(bitwise(step(given_none, params, B, T), fp32_alone));
}
