// The bf16 attention backward overwrites q/k/v's gradient (ModelHooks::attention_backward_overwrites),
// so the block's backward no longer zeroes it first, and it applies RoPE's backward and the
// rounding for the q/k/v GEMM in its last pass: a bf16 model's loss and every gradient are bitwise
// those of zeroing, accumulating and rotating apart (a hook that asks for that), under each
// recompute policy and over two micro-batches (the second finds the buffers holding the first's
// leftovers), and the fused kernel really ran once per block (counted). fp32 runs never take it.
// (RoundedGrads in test_rounded_grads.cpp compares it with the unfused roundings as well.)
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/flash_attention_bf16.h"
#include "kernels/gemm_context.h"
#include "model_fixture.h"

using namespace ff;

namespace {

// The serial hooks, but the attention backward adds into zeroed gradients as before.
struct AccumulatingHooks : ModelHooks {
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
  AccumulatingHooks accumulating;
  Llama model(c, B, policy, nullptr, overwrite ? nullptr : &accumulating, nullptr, &gemm);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 9);
  const auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  const auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  const size_t before = attention_backward_bf16_overwrites(), rope = attention_backward_bf16_rope_roundings();
  Pass p;
  p.loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 0.5f / (B * T));
  p.loss += model.forward_backward(params.data(), grads.data(), targets.data(), tokens.data(), B, T, 0.5f / (B * T));
  p.grads = std::move(grads);
  p.overwrites = attention_backward_bf16_overwrites() - before;
  p.rope_roundings = attention_backward_bf16_rope_roundings() - rope;
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
