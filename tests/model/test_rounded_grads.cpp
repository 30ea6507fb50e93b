// GEMM output gradients rounded by the kernels that make them (model/llama_rounded_grads.cpp: the
// loss, RoPE's and the norms' backward), the gate/up output rounded by SwiGLU as it reads it, and a
// bf16 attention output written by the attention kernel itself: in a bf16 run the loss and every
// gradient are bitwise those of the same model rounding them in separate passes (the GEMMs
// rounding dy themselves, att staged fp32 and converted), under each recompute policy, and the
// fused path really ran: the LM head's and o's, down's and q/k/v's backward GEMMs of every block read
// the kernels' rounded gradient (counted). fp32 runs never take it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "kernels/gemm_context.h"
#include "model_fixture.h"

using namespace ff;

namespace {

struct Pass {
  double loss;
  std::vector<float> grads;
  int64_t rounded_uses;
};

Pass run(DType precision, Recompute policy, bool rounding_in_kernels,
         const ModelConfig& c = testkit::small_gqa_config()) {
  const int B = 4, T = c.seq_len;
  const GemmContext gemm{.input_dtype = precision};
  Llama model(c, B, policy, nullptr, nullptr, nullptr, &gemm);
  model.set_rounding_in_kernels(rounding_in_kernels);
  const size_t n = model.layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model.layout(), c, 9);
  testkit::perturb_norms(params.data(), model.layout(), 3);
  const auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  const auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  Pass p;
  // Two micro-batches into the same gradients: the second starts with the copies of the first left over.
  p.loss = model.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 0.5f / (B * T));
  p.loss += model.forward_backward(params.data(), grads.data(), targets.data(), tokens.data(), B, T, 0.5f / (B * T));
  p.grads = std::move(grads);
  p.rounded_uses = model.rounded_grad_uses();
  return p;
}

bool bitwise(const Pass& a, const Pass& b) { return testkit::same_bits(a.loss, a.grads, b.loss, b.grads); }

}  // namespace

TEST(RoundedGrads, Bf16IsBitwiseTheSeparateRoundingPassesUnderEveryPolicy) {
  const int L = testkit::small_gqa_config().n_layers;
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const Pass fused = run(DType::bf16, r, true), separate = run(DType::bf16, r, false);
    EXPECT_TRUE(bitwise(fused, separate)) << recompute_name(r);
    // Per micro-batch: the LM head (from the loss), and per block o and q/k/v, and down from the
    // norm above it (the final norm's for the last block): 3 L + 1, over two micro-batches.
    EXPECT_EQ(fused.rounded_uses, 2 * (3 * L + 1)) << recompute_name(r);
    EXPECT_EQ(separate.rounded_uses, 0) << recompute_name(r);
  }
}

// The q/k/v bias gradient sums the rows the q/k/v GEMM reads: rounded by RoPE's backward (or the
// bf16 attention kernel) in one path, by the separate pass in the other; the same bits.
TEST(RoundedGrads, OpenModelShapeBf16IsBitwiseTheSeparateRoundingPasses) {
  const ModelConfig c = testkit::small_open_model_config();
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    const Pass fused = run(DType::bf16, r, true, c), separate = run(DType::bf16, r, false, c);
    EXPECT_TRUE(bitwise(fused, separate)) << recompute_name(r);
    EXPECT_GT(fused.rounded_uses, 0) << recompute_name(r);
  }
}

TEST(RoundedGrads, Fp32NeverRoundsAndIsUnchanged) {
  const Pass on = run(DType::f32, Recompute::none, true), off = run(DType::f32, Recompute::none, false);
  EXPECT_TRUE(bitwise(on, off));
  EXPECT_EQ(on.rounded_uses, 0);
}
