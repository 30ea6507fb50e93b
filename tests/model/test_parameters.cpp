#include <gtest/gtest.h>

#include <cmath>

#include "model_fixture.h"

using namespace ff;

TEST(Parameters, CountMatchesTheLlamaFormula) {
  ModelConfig c = testkit::small_gqa_config();
  ParamLayout layout(c);
  // FORMULAS.md: V*h (+ V*h untied) + L*(h*(h + 2*h_kv) + h*h + 3*h*f + 2h) + h
  const int64_t h = c.dim, hkv = c.n_kv_heads * c.head_dim(), V = c.vocab_size, f = c.ffn_dim;
  const int64_t expected = 2 * V * h + c.n_layers * (h * (h + 2 * hkv) + h * h + 3 * h * f + 2 * h) + h;
  EXPECT_EQ(int64_t(layout.total()), expected);
  c.tied_embeddings = true;
  EXPECT_EQ(int64_t(ParamLayout(c).total()), expected - V * h);
}

TEST(Parameters, InitDependsOnlyOnSeedNameAndIndex) {
  ModelConfig c = testkit::small_gqa_config();
  ParamLayout layout(c);
  std::vector<float> a(layout.total()), b(layout.total());
  init_parameters(a.data(), layout, c, 77);
  init_parameters(b.data(), layout, c, 77);
  EXPECT_EQ(a, b);
  // A deeper model shares the first layers' names, so their weights are the same values.
  ModelConfig deeper = c;
  deeper.n_layers = 3;
  ParamLayout dl(deeper);
  std::vector<float> d(dl.total());
  init_parameters(d.data(), dl, deeper, 77);
  const auto& q0 = layout.find("model.layers.0.self_attn.q_proj.weight");
  const auto& dq0 = dl.find("model.layers.0.self_attn.q_proj.weight");
  for (size_t i = 0; i < q0.numel; ++i) ASSERT_EQ(a[q0.offset + i], d[dq0.offset + i]);
  // Statistics: std of a matrix is init_std.
  double sq = 0;
  for (size_t i = 0; i < q0.numel; ++i) sq += double(a[q0.offset + i]) * a[q0.offset + i];
  EXPECT_NEAR(std::sqrt(sq / q0.numel), c.init_std, 0.1 * c.init_std);
}

TEST(ModelConfig, ShapeThatDoesNotDivideIsRefusedWithTheNumbers) {
  ModelConfig c = testkit::small_gqa_config();
  c.n_heads = 5;
  try {
    c.validate();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("dim (64) must be divisible by n_heads (5)"), std::string::npos) << e.what();
  }
}

// Each block has its own kind and offsets (a pipeline stage's blocks sit at different offsets of
// its flat buffer, and MoE blocks will differ in shape); every segment is in the dense group.
TEST(Parameters, BlockOffsetsAreThoseOfEachBlocksOwnTensors) {
  const ModelConfig c = testkit::small_gqa_config();
  ModelParts stage;
  stage.layers = {1};
  stage.embedding = false;
  auto check = [&](const ParamLayout& layout, std::vector<int> layers) {
    for (int l : layers) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      const size_t start = layout.block_segment(l).offset;
      const BlockOffsets& o = layout.block_offsets(l);
      EXPECT_EQ(layout.block_kind(l), BlockKind::dense);
      EXPECT_EQ(start + o.attn_norm, layout.find(p + "input_layernorm.weight").offset);
      EXPECT_EQ(start + o.qkv, layout.find(p + "self_attn.q_proj.weight").offset);
      EXPECT_EQ(start + o.o, layout.find(p + "self_attn.o_proj.weight").offset);
      EXPECT_EQ(start + o.mlp_norm, layout.find(p + "post_attention_layernorm.weight").offset);
      EXPECT_EQ(start + o.mlp.gate_up, layout.find(p + "mlp.gate_proj.weight").offset);
      EXPECT_EQ(start + o.mlp.down, layout.find(p + "mlp.down_proj.weight").offset);
    }
    for (size_t i = 0; i < layout.segments().size(); ++i) EXPECT_EQ(layout.segment_group(i), ParamGroupKind::dense);
  };
  const ParamLayout whole(c), part(c, nullptr, &stage);
  check(whole, {0, 1});
  check(part, {1});
  // Layer 1 alone starts the stage's buffer; in the whole model it follows the embedding and layer 0.
  EXPECT_EQ(part.block_segment(1).offset, 0u);
  EXPECT_EQ(whole.block_segment(1).offset, whole.block_segment(0).end());
}
