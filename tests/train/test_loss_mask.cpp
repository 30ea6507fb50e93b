// The trainer on loss-masked data: a mask that keeps every target changes no number, and data that
// leaves a batch nothing to average is refused naming the data instead of dividing by zero.
// `fivefold eval`'s evaluate_stream averages over the loss targets of a masked stream.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../model/model_fixture.h"
#include "io/tokens/token_stream.h"
#include "model/parameters.h"
#include "test_data.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

std::vector<uint8_t> every_token(const std::string&, size_t n) { return std::vector<uint8_t>(n, 1); }

// What the run's error says, or "" when it trains `steps` steps.
std::string error_of(const TrainConfig& c, int steps) {
  try {
    Trainer t(c, testkit::temp_dir("mask-error"), nullptr);
    t.quiet = true;
    for (int s = 0; s < steps; ++s) t.train_step();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The loader sums the mask instead of returning G*T, and every target stays: the losses, norms
// and validation loss must be bitwise those of the same data without a mask.
TEST(LossMask, AMaskKeepingEveryTargetChangesNoNumber) {
  TrainConfig plain = testkit::tiny_config(testkit::tiny_data_dir());
  plain.steps = 3;
  TrainConfig masked = plain;
  masked.data = testkit::masked_copy_of_tiny_data(every_token);
  Trainer a(plain, testkit::temp_dir("plain"), nullptr), b(masked, testkit::temp_dir("all-targets"), nullptr);
  a.quiet = b.quiet = true;
  for (int s = 0; s < plain.steps; ++s) {
    const StepRecord ra = a.train_step(), rb = b.train_step();
    EXPECT_EQ(std::memcmp(&ra.loss, &rb.loss, sizeof ra.loss), 0) << "step " << s + 1;
    EXPECT_EQ(std::memcmp(&ra.grad_norm, &rb.grad_norm, sizeof ra.grad_norm), 0) << "step " << s + 1;
  }
  const double va = a.evaluate(), vb = b.evaluate();
  EXPECT_EQ(std::memcmp(&va, &vb, sizeof va), 0);
}

TEST(LossMask, AGlobalBatchWithoutLossTargetsStopsNamingTheData) {
  TrainConfig c = testkit::tiny_config(testkit::masked_copy_of_tiny_data([](const std::string& split, size_t n) {
    return std::vector<uint8_t>(n, split == "train" ? 0 : 1);
  }));
  const std::string e = error_of(c, 1);
  EXPECT_NE(e.find("step 1"), std::string::npos) << e;
  EXPECT_NE(e.find("loss mask of the training data in '" + c.data + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("completion tokens"), std::string::npos) << e;  // the fix
}

// Refused when the trainer is built, before a step runs, when evaluations are due.
TEST(LossMask, ValidationWithoutLossTargetsIsRefusedBeforeTraining) {
  TrainConfig c = testkit::tiny_config(testkit::masked_copy_of_tiny_data([](const std::string& split, size_t n) {
    return std::vector<uint8_t>(n, split == "val" ? 0 : 1);
  }));
  c.eval_every = 10;
  const std::string e = error_of(c, 0);
  EXPECT_NE(e.find("loss mask of the validation data in '" + c.data + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("eval_batches"), std::string::npos) << e;
  c.eval_every = 0;  // no evaluation: nothing to refuse
  EXPECT_EQ(error_of(c, 1), "");
}

// The model's own logits, window by window, turned into the masked mean here in double: the
// targets are the next tokens whose mask bit is 1.
TEST(LossMask, EvaluateStreamAveragesOverTheLossTargetsOnly) {
  const ModelConfig c = testkit::small_gqa_config();
  const int T = c.seq_len, windows = 5, V = c.vocab_size;
  Llama model(c, 2, Recompute::none);
  std::vector<float> params(model.layout().total());
  init_parameters(params.data(), model.layout(), c, 7);
  const std::vector<int32_t> tokens = testkit::random_tokens(windows * T + 1, V, 3);
  std::vector<uint8_t> mask(tokens.size());
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 11 < 4;  // about a third are targets

  double want_sum = 0;
  int64_t want_targets = 0;
  for (int w = 0; w < windows; ++w) {
    const float* logits = model.forward_logits(params.data(), tokens.data() + size_t(w) * T, 1, T);
    for (int t = 0; t < T; ++t) {
      const size_t next = size_t(w) * T + size_t(t) + 1;
      if (!mask[next]) continue;
      const float* row = logits + size_t(t) * V;
      double mx = row[0], s = 0;
      for (int v = 1; v < V; ++v) mx = std::max(mx, double(row[v]));
      for (int v = 0; v < V; ++v) s += std::exp(double(row[v]) - mx);
      want_sum += std::log(s) + mx - double(row[tokens[next]]);
      ++want_targets;
    }
  }
  const EvalResult r = evaluate_stream(model, params.data(), *tokens_in_memory(tokens, mask), 2);
  EXPECT_EQ(r.tokens, want_targets);
  EXPECT_NEAR(r.mean_loss, want_sum / double(want_targets), 2e-6 * want_sum / double(want_targets));

  const std::vector<uint8_t> none(tokens.size(), 0);
  EXPECT_THROW(evaluate_stream(model, params.data(), *tokens_in_memory(tokens, none), 2), std::runtime_error);
}
