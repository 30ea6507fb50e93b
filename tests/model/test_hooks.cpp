// The serial model reaches every operation a parallelism may change through its hooks
// (model_hooks.h): hooks that count each call and otherwise compute serially give the default
// model's loss and gradients bit for bit, and each hook runs as often as the model's structure
// says (per block: two column inputs in forward and two again for the weight gradients, two row
// outputs, one attention, one MLP; once: embedding, head input, loss), with recomputation adding
// exactly the forward work it repeats.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "model_fixture.h"

using namespace ff;
using namespace ff::testkit;

namespace {

class CountingHooks final : public ModelHooks {
 public:
  std::map<std::string, int> calls;

  ConstTypedPtr column_input(ConstTypedPtr x, size_t N, int width) override {
    ++calls["column_input"];
    return ModelHooks::column_input(x, N, width);
  }
  float* column_input_backward(float* d, size_t N, int width) override {
    ++calls["column_input_backward"];
    return ModelHooks::column_input_backward(d, N, width);
  }
  void row_output(const GemmContext& g, float* out, const float* resid, ConstTypedPtr x, WeightRef W, int N, int in,
                  int C) override {
    ++calls["row_output"];
    ModelHooks::row_output(g, out, resid, x, W, N, in, C);
  }
  const float* row_output_backward(const float* dy, size_t N, int C) override {
    ++calls["row_output_backward"];
    return ModelHooks::row_output_backward(dy, N, C);
  }
  void attention(const GemmContext& g, TypedPtr att, float* lse, const float* q, const float* k, const float* v,
                 const AttentionShape& s, float* staging) override {
    ++calls["attention"];
    ModelHooks::attention(g, att, lse, q, k, v, s, staging);
  }
  void attention_backward(const GemmContext& g, float* dq, float* dk, float* dv, const float* d_att, const float* q,
                          const float* k, const float* v, ConstTypedPtr att, const float* lse,
                          const AttentionShape& s, float* staging) override {
    ++calls["attention_backward"];
    ModelHooks::attention_backward(g, dq, dk, dv, d_att, q, k, v, att, lse, s, staging);
  }
  void mlp(const MlpCall& m, float* out) override {
    ++calls["mlp"];
    ModelHooks::mlp(m, out);
  }
  void mlp_backward(const MlpCall& m, const float* d_resid, float* d_ln, float* G,
                    const DeferredGrads* def) override {
    ++calls["mlp_backward"];
    ModelHooks::mlp_backward(m, d_resid, d_ln, G, def);
  }
  void embedding(float* x, const int32_t* tokens, const float* E, int N, int C, VocabRange v) override {
    ++calls["embedding"];
    ModelHooks::embedding(x, tokens, E, N, C, v);
  }
  void embedding_backward(float* dE, const float* dx, const int32_t* tokens, int N, int C, VocabRange v) override {
    ++calls["embedding_backward"];
    ModelHooks::embedding_backward(dE, dx, tokens, N, C, v);
  }
  double loss(float* logits, float* losses, const int32_t* targets, int N, VocabRange v, bool with_grad,
              float grad_scale, TypedPtr grad_rounded) override {
    ++calls["loss"];
    return ModelHooks::loss(logits, losses, targets, N, v, with_grad, grad_scale, grad_rounded);
  }
};

void check_hooks(Recompute policy) {
  const ModelConfig c = small_gqa_config();
  const int B = 2, T = c.seq_len, L = c.n_layers;
  Llama plain(c, B, policy);
  CountingHooks hooks;
  Llama hooked(c, B, policy, nullptr, &hooks);
  std::vector<float> params(plain.layout().total()), expect(params.size(), 0.0f), got(params.size(), 0.0f);
  init_parameters(params.data(), plain.layout(), c, 3);
  perturb_norms(params.data(), plain.layout(), 4);
  const std::vector<int32_t> tokens = random_tokens(B * T, c.vocab_size, 5), targets = random_tokens(B * T, c.vocab_size, 6);
  const double expect_loss = plain.forward_backward(params.data(), expect.data(), tokens.data(), targets.data(), B, T, 0.01f);
  const double loss = hooked.forward_backward(params.data(), got.data(), tokens.data(), targets.data(), B, T, 0.01f);
  EXPECT_EQ(loss, expect_loss);
  EXPECT_EQ(got, expect);

  // Recomputation repeats forward work in backward: selective the attention core, full the
  // whole block but its MLP's down projection (the block's output is not needed again).
  const int again = policy == Recompute::none ? 0 : L;
  const bool full = policy == Recompute::full;
  std::map<std::string, int> want = {
      {"embedding", 1},
      {"column_input", 2 * L + 1 + 2 * L + (full ? 2 * L : 0)},  // q/k/v, gate/up, head; weight grads
      {"column_input_backward", 2 * L + 1},
      {"row_output", 2 * L + (full ? L : 0)},  // o and down (+ o again)
      {"row_output_backward", 2 * L},
      {"attention", L + again},
      {"attention_backward", L},
      {"mlp", L + (full ? L : 0)},
      {"mlp_backward", L},
      {"loss", 1},
      {"embedding_backward", 1},
  };
  EXPECT_EQ(hooks.calls, want);
}

}  // namespace

TEST(Hooks, EveryParallelisableStepGoesThroughItsHook) { check_hooks(Recompute::none); }
TEST(Hooks, RecomputeSelectiveRepeatsTheAttentionHook) { check_hooks(Recompute::selective); }
TEST(Hooks, RecomputeFullRepeatsTheBlockForwardHooks) { check_hooks(Recompute::full); }
