// Recomputation must not change a single bit of the loss or the gradients, and must hold fewer
// activation bytes, exactly as many as the policy's table in model/activations.h says.
#include <gtest/gtest.h>

#include <cstring>

#include "model_fixture.h"

using namespace ff;

namespace {
struct Result {
  double loss;
  std::vector<float> grads;
  int64_t activation_bytes;
};

Result run(Recompute policy, const ModelConfig& c = testkit::small_gqa_config()) {
  const int B = 4, T = c.seq_len;
  auto before = MemoryLedger::instance().snapshot();
  Llama model(c, B, policy);
  auto after = MemoryLedger::instance().snapshot();
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 9);
  if (c.qkv_bias) testkit::perturb_norms(params.data(), model.layout(), 3);  // biases away from 0
  auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  Result r;
  r.loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B,
                                  T, 1.0f / (B * T));
  r.grads = std::move(grads);
  const int a = int(MemCategory::activations);
  r.activation_bytes = after.current[a] - before.current[a];
  return r;
}
}  // namespace

TEST(Recompute, SelectiveAndFullAreBitwiseIdenticalToNone) {
  Result none = run(Recompute::none), sel = run(Recompute::selective), full = run(Recompute::full);
  EXPECT_EQ(std::memcmp(&none.loss, &sel.loss, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&none.loss, &full.loss, sizeof(double)), 0);
  ASSERT_EQ(none.grads.size(), sel.grads.size());
  EXPECT_EQ(std::memcmp(none.grads.data(), sel.grads.data(), none.grads.size() * 4), 0);
  EXPECT_EQ(std::memcmp(none.grads.data(), full.grads.data(), none.grads.size() * 4), 0);
}

// With q/k/v bias (recomputed with the q/k/v GEMM under full, kept in qkv under selective),
// head_dim 24 and llama3 RoPE.
TEST(Recompute, OpenModelShapeSelectiveAndFullAreBitwiseIdenticalToNone) {
  const ModelConfig c = testkit::small_open_model_config();
  Result none = run(Recompute::none, c), sel = run(Recompute::selective, c), full = run(Recompute::full, c);
  EXPECT_TRUE(testkit::same_bits(none.loss, none.grads, sel.loss, sel.grads));
  EXPECT_TRUE(testkit::same_bits(none.loss, none.grads, full.loss, full.grads));
}

TEST(Recompute, ActivationBytesFollowThePolicyTable) {
  ModelConfig c = testkit::small_gqa_config();
  const int64_t N = 4 * c.seq_len;
  // Kept per block from the table, plus the final norm's input, output and rstd.
  auto expected = [&](Recompute r) {
    return 4 * (kept_floats_per_token(c, r) * N * c.n_layers + N * (2 * c.dim + 1));
  };
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    // Tensors are padded to 16 floats; at N = 96 rows no tensor needs padding, so this is exact.
    EXPECT_EQ(run(r).activation_bytes, expected(r)) << recompute_name(r);
  }
  // The independent figures: per token and block, none keeps 4C + Q + A + H + 3F + 2 floats,
  // selective C + Q + C + 2F, full C.
  const int64_t C = c.dim, Q = c.qkv_dim(), A = c.n_heads * c.head_dim(), H = c.n_heads,
                F = c.ffn_dim;
  EXPECT_EQ(kept_floats_per_token(c, Recompute::none), 4 * C + Q + A + H + 3 * F + 2);
  EXPECT_EQ(kept_floats_per_token(c, Recompute::selective), 2 * C + Q + 2 * F);
  EXPECT_EQ(kept_floats_per_token(c, Recompute::full), C);
}

// Every tensor of every block starts on a 64-byte boundary, in the kept arena and in the shared
// scratch alike (what keeps recomputation bitwise identical), and blocks' kept tensors do not
// overlap: block l + 1's x_in follows all of block l's kept floats. Rows chosen so that widths
// need padding (7 rows x odd widths).
TEST(Recompute, EveryActivationTensorIsAlignedAndBlocksFollowEachOther) {
  const BlockWidths w{24, 40, 16, 2, 20};
  const std::vector<BlockKind> kinds(3, BlockKind::dense);
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Activations acts(w, kinds, 7, 7, r);
    for (int l = 0; l < 3; ++l) {
      const BlockActs& a = acts.block(l);
      for (const void* p : {a.x_in, a.rstd1, a.ln1.f32(), a.qkv, a.att.f32(), a.lse, a.mid, a.rstd2,
                            a.ln2.f32(), a.mlp.gate_up.f32(), a.mlp.h.f32()})
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << recompute_name(r) << " block " << l;
    }
    // Padded kept floats of one block: each kept tensor rounded up to 16 floats.
    auto pad = [](int64_t n) { return (n + 15) / 16 * 16; };
    int64_t kept = pad(7 * w.C);  // x_in, kept by every policy
    if (r != Recompute::full) kept += pad(7 * w.Q) + pad(7 * w.C) + pad(7 * 2 * w.F);  // qkv, mid, gate_up
    if (r == Recompute::none)
      kept += 2 * pad(7) + 2 * pad(7 * w.C) + pad(7 * w.A) + pad(7 * w.H) + pad(7 * w.F);  // rstd, ln, att, lse, h
    EXPECT_EQ(acts.block(1).x_in - acts.block(0).x_in, kept) << recompute_name(r);
    EXPECT_EQ(acts.block(2).x_in - acts.block(1).x_in, kept) << recompute_name(r);
  }
}
