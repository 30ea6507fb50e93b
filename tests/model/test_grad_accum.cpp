// Gradient accumulation: two micro-batches of 4 must equal one batch of 8 (to within 1e-6 relative
// in loss and gradients).
#include <gtest/gtest.h>

#include "model_fixture.h"

using namespace ff;

TEST(GradAccum, FourTimesTwoEqualsEight) {
  ModelConfig c = testkit::small_gqa_config();
  const int T = c.seq_len, G = 8;
  Llama big(c, G, Recompute::none), small(c, 4, Recompute::none);
  const size_t n = big.layout().total();
  std::vector<float> params(n), g_big(n, 0.0f), g_acc(n, 0.0f);
  init_parameters(params.data(), big.layout(), c, 3);
  auto tokens = testkit::random_tokens(G * T, c.vocab_size, 1);
  auto targets = testkit::random_tokens(G * T, c.vocab_size, 2);
  const float scale = 1.0f / float(G * T);

  double loss_big = big.forward_backward(params.data(), g_big.data(), tokens.data(),
                                         targets.data(), G, T, scale);
  double loss_acc = 0;
  for (int micro = 0; micro < 2; ++micro)
    loss_acc += small.forward_backward(params.data(), g_acc.data(), tokens.data() + micro * 4 * T,
                                       targets.data() + micro * 4 * T, 4, T, scale);

  EXPECT_NEAR(loss_acc / loss_big, 1.0, 1e-6);
  for (const auto& v : big.layout().views())
    EXPECT_LT(testkit::max_rel_diff(g_acc.data() + v.offset, g_big.data() + v.offset, v.numel), 1e-6)
        << v.name;
  // Not vacuous: the gradient is far from zero.
  double norm = 0;
  for (float g : g_big) norm += double(g) * g;
  EXPECT_GT(norm, 1e-6);
}
