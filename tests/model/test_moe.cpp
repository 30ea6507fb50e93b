// The serial MoE block beyond the oracle: recomputation is bitwise, statistics count each
// training forward once, the selection bias moves the choice but not the gates, and the layout
// puts each MoE block's experts in a segment of the expert group.
#include <gtest/gtest.h>

#include <cstring>

#include "model_fixture.h"

using namespace ff;

namespace {

ModelConfig moe_config() {
  ModelConfig c = testkit::small_gqa_config();
  c.moe.n_experts = 4, c.moe.top_k = 2, c.moe.expert_ffn_dim = 32, c.moe.shared_experts = 1;
  c.moe.capacity_factor = 1.0f;
  return c;
}

struct Result {
  double loss, moe_loss;
  std::vector<float> grads;
  std::vector<double> routed;
};

Result run(const ModelConfig& c, Recompute policy, float bias0 = 0) {
  const int B = 2, T = c.seq_len;
  Llama model(c, B, policy);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 9);
  for (int l = 0; l < c.n_layers; ++l) model.router_bias(l)[0] = bias0;
  auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  model.moe_stats().reset();
  Result r;
  r.loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 1.0f / (B * T));
  r.moe_loss = model.moe_stats().loss_sum();
  r.grads = std::move(grads);
  for (const MoeLayerStats& s : model.moe_stats().layers) r.routed.insert(r.routed.end(), s.routed.begin(), s.routed.end());
  return r;
}

}  // namespace

TEST(Moe, RecomputeIsBitwiseAndCountsRoutesOnce) {
  const ModelConfig c = moe_config();
  Result none = run(c, Recompute::none), sel = run(c, Recompute::selective), full = run(c, Recompute::full);
  for (const Result* r : {&sel, &full}) {
    EXPECT_EQ(std::memcmp(&none.loss, &r->loss, sizeof(double)), 0);
    EXPECT_EQ(none.moe_loss, r->moe_loss);
    EXPECT_EQ(none.routed, r->routed);  // full recomputation re-routes but must not count twice
    ASSERT_EQ(none.grads.size(), r->grads.size());
    EXPECT_EQ(std::memcmp(none.grads.data(), r->grads.data(), none.grads.size() * 4), 0);
  }
  double routes = 0;
  for (double x : none.routed) routes += x;
  EXPECT_EQ(routes, double(c.n_layers) * 2 * c.seq_len * c.moe.top_k);
  EXPECT_GT(none.moe_loss, 0.0);
}

TEST(Moe, SelectionBiasMovesTheChoiceOnly) {
  const ModelConfig c = moe_config();
  Result plain = run(c, Recompute::none), pushed = run(c, Recompute::none, 10.0f);
  // A large bias on expert 0 makes every token choose it (it is the selection, not the score).
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(pushed.routed[size_t(l) * 4], 2.0 * c.seq_len) << "layer " << l;
    EXPECT_NE(plain.routed[size_t(l) * 4], 2.0 * c.seq_len);
  }
}

TEST(Moe, ExpertsFormSegmentsOfTheExpertGroup) {
  ModelConfig c = moe_config();
  c.moe.moe_layers = "1";
  ModelParts half = ModelParts::all(c);
  half.expert_first = 2, half.expert_count = 2;
  const ParamLayout whole(c), mine(c, nullptr, &half);
  EXPECT_EQ(whole.block_kind(0), BlockKind::dense);
  EXPECT_EQ(whole.block_kind(1), BlockKind::moe);
  EXPECT_EQ(whole.expert_segment(0).count, 0u);
  const size_t per_expert = size_t(3) * 32 * c.dim;
  EXPECT_EQ(whole.expert_segment(1).count, 4 * per_expert);
  EXPECT_EQ(mine.expert_segment(1).count, 2 * per_expert);
  EXPECT_NO_THROW(mine.find("model.layers.1.block_sparse_moe.experts.3.w2.weight"));
  EXPECT_THROW(mine.find("model.layers.1.block_sparse_moe.experts.1.w1.weight"), std::runtime_error);
  int expert_segments = 0;
  for (size_t i = 0; i < whole.segments().size(); ++i)
    if (whole.segment_group(i) == ParamGroupKind::expert) {
      ++expert_segments;
      EXPECT_EQ(whole.segments()[i].offset, whole.expert_segment(1).offset);
      // Right above its block: backward releases it first, segments complete top-down.
      EXPECT_EQ(whole.segments()[i].offset, whole.block_segment(1).end());
    }
  EXPECT_EQ(expert_segments, 1);
}
