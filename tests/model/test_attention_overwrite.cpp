// The bf16 attention backward overwrites q/k/v's gradient (ModelHooks::attention_backward_overwrites),
// so the block's backward no longer zeroes it first, and it applies RoPE's backward and the
// rounding for the q/k/v GEMM in its last pass: a bf16 model's loss and every gradient are bitwise
// those of zeroing, accumulating and rotating apart (a hook that asks for that), under each
// recompute policy and over two micro-batches (the second finds the buffers holding the first's
// leftovers), and the fused backward really ran once per block (counted by the test's hooks,
// whose base class calls the kernel). fp32 runs never take it.
// (RoundedGrads in test_rounded_grads.cpp compares it with the unfused roundings as well.)
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/gemm_context.h"
#include "model_fixture.h"

using namespace ff;

namespace {

// The serial hooks, counting the attention backwards that overwrite q/k/v's gradient: the plain
// one while attention_backward_overwrites() (it then runs the overwriting kernel) and the one
// with RoPE's backward and the rounding fused in, which always overwrites.
struct CountingHooks : ModelHooks {
  size_t overwrites = 0, rope_roundings = 0;

  void attention_backward(const GemmContext& g, float* dq, float* dk, float* dv, const float* d_att,
                          const float* q, const float* k, const float* v, ConstTypedPtr att, const float* lse,
                          const AttentionShape& s, float* staging) override {
    overwrites += attention_backward_overwrites(g);
    ModelHooks::attention_backward(g, dq, dk, dv, d_att, q, k, v, att, lse, s, staging);
  }
  void attention_backward_rope_rounded(TypedPtr dq, TypedPtr dk, TypedPtr dv, const float* d_att, const float* q,
                                       const float* k, const float* v, ConstTypedPtr att, const float* lse,
                                       const AttentionShape& s, const float* cos, const float* sin) override {
    ++overwrites, ++rope_roundings;
    ModelHooks::attention_backward_rope_rounded(dq, dk, dv, d_att, q, k, v, att, lse, s, cos, sin);
  }
};

// The same, but the attention backward adds into zeroed gradients as before.
struct AccumulatingHooks : CountingHooks {
  bool attention_backward_overwrites(const GemmContext&) const override { return false; }
};

struct Pass {
  double loss;
  std::vector<float> grads;
  size_t overwrites, rope_roundings;
};

Pass run(DType precision, Recompute policy, bool overwrite) {
  const ModelConfig c = testkit::small_gqa_config();
  const int B = 4, T = c.seq_len;
  const GemmContext gemm{.input_dtype = precision};
  CountingHooks overwriting;
  AccumulatingHooks accumulating;
  CountingHooks& hooks = overwrite ? overwriting : accumulating;
  Llama model(c, B, policy, nullptr, &hooks, nullptr, &gemm);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 9);
  const auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  const auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  Pass p;
  p.loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 0.5f / (B * T));
  p.loss += model.forward_backward(params.data(), grads.data(), targets.data(), tokens.data(), B, T, 0.5f / (B * T));
  p.grads = std::move(grads);
  p.overwrites = hooks.overwrites;
  p.rope_roundings = hooks.rope_roundings;
  return p;
}

bool bitwise(const Pass& a, const Pass& b) { return testkit::same_bits(a.loss, a.grads, b.loss, b.grads); }

}  // namespace

TEST(AttentionOverwrite, Bf16IsBitwiseZeroingThenAccumulatingUnderEveryPolicy) {
  const size_t L = size_t(testkit::small_gqa_config().n_layers);
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const Pass into = run(DType::bf16, r, true), added = run(DType::bf16, r, false);
    EXPECT_TRUE(bitwise(into, added)) << recompute_name(r);
    EXPECT_EQ(into.overwrites, 2 * L) << recompute_name(r);  // every block, both micro-batches
    // ... each with RoPE's backward and the rounding for the q/k/v GEMM in the kernel's last pass.
    EXPECT_EQ(into.rope_roundings, 2 * L) << recompute_name(r);
    EXPECT_EQ(added.overwrites, 0u) << recompute_name(r);
    EXPECT_EQ(added.rope_roundings, 0u) << recompute_name(r);
  }
}

TEST(AttentionOverwrite, Fp32KeepsZeroingAndAccumulating) {
  const Pass a = run(DType::f32, Recompute::none, true), b = run(DType::f32, Recompute::none, false);
  EXPECT_TRUE(bitwise(a, b));
  EXPECT_EQ(a.overwrites, 0u);
  EXPECT_EQ(a.rope_roundings, 0u);
}
