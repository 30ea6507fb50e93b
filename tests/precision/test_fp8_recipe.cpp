// fp8 delayed scaling inside the model (kernels/fp8_recipe.h, Transformer Engine's default recipe).
//   - A `tiny` fp8 training run of 6 steps: every GEMM operand of every layer is a tensor of its
//     own (forward x and W, dgrad dy and W, wgrad dy and x: 6 per linear layer), e4m3 forward and
//     e5m2 gradients, and the scale each step used equals the one written out here from the
//     amaxes the earlier steps recorded: 1 before any history, then fp8_max / max(amaxes so far)
//     (margin 0, history 1024 > 6 steps, so nothing has aged out).
//   - One GEMM through the recipe over two "steps": the product equals an fp32 GEMM of operands
//     quantised here, by the independent fp8 rounding of the kernel test, with those scales.
//   - Resume: a run stopped at step 3 (right after an evaluation) and resumed equals the run
//     that never stopped, bit for bit: losses, gradient norms, and every tensor's scales and
//     amaxes of the resumed steps; the checkpoint holds one fp8 state per tensor (6 per linear).
//   - Precision changes on resume: fp8 -> bf16 ignores the fp8 states and trains on; bf16 -> fp8
//     starts every scale afresh at 1 (TE's initial scale) and trains on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ckpt/sharded.h"
#include "kernels/fp8_recipe.h"
#include "kernels/gemm.h"
#include "test_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

namespace {

using namespace ff;

double expected_scale(const std::vector<float>& amaxes, size_t step, Fp8Format f) {
  double m = 0;
  for (size_t i = 0; i < step; ++i) m = std::max(m, double(amaxes[i]));
  return m > 0 ? fp8_max(f) / m : 1.0;
}

TEST(Fp8Recipe, TrainingScalesFollowTheRecordedAmaxes) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 6;
  c.precision = Precision::fp8;
  Trainer t(c, testkit::temp_dir("fp8_recipe"), nullptr);
  t.quiet = true;
  t.run();
  ASSERT_NE(t.fp8_scaling(), nullptr);
  // Each linear layer (qkv, o, gate_up, down per block; the LM head) holds 6 tensors.
  const size_t linears = size_t(c.model.n_layers) * 4 + 1;
  EXPECT_EQ(t.fp8_scaling()->tensors(), 6 * linears);
  size_t e5m2 = 0, checked = 0;
  for (const Fp8Recipe::Log& log : t.fp8_scaling()->logs()) {
    ASSERT_EQ(log.scales.size(), size_t(c.steps));
    ASSERT_EQ(log.amaxes.size(), size_t(c.steps));
    e5m2 += log.format == Fp8Format::e5m2;
    for (size_t s = 0; s < log.scales.size(); ++s) {
      EXPECT_TRUE(std::isfinite(log.amaxes[s]) && log.amaxes[s] > 0);
      const double want = expected_scale(log.amaxes, s, log.format);
      EXPECT_NEAR(log.scales[s], want, 1e-6 * want) << "step " << s + 1;
      ++checked;
    }
  }
  EXPECT_EQ(e5m2, 2 * linears);  // dgrad's and wgrad's dy
  EXPECT_EQ(checked, 6 * linears * size_t(c.steps));
  EXPECT_LT(t.history().back().loss, t.history().front().loss);  // it trains
}

TEST(Fp8Recipe, GemmUsesTheDelayedScales) {
  const int M = 5, N = 7, K = 9;
  std::vector<float> A(M * K), B(N * K);
  for (int i = 0; i < M * K; ++i) A[i] = 0.3f * std::sin(1.3f * i) + 0.01f * i;
  for (int i = 0; i < N * K; ++i) B[i] = 0.02f * std::cos(0.7f * i);
  Fp8Recipe recipe;
  const GemmContext fp8{.fp8 = true, .fp8_recipe = &recipe};
  std::vector<float> C1(M * N), C2(M * N);
  gemm_run_precision(fp8, false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C1.data(), N);  // step 1: scale 1
  recipe.end_step();
  gemm_run_precision(fp8, false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C2.data(), N);  // step 2: delayed
  float amax_a = 0, amax_b = 0;
  for (float x : A) amax_a = std::max(amax_a, std::fabs(x));
  for (float x : B) amax_b = std::max(amax_b, std::fabs(x));
  for (int step = 1; step <= 2; ++step) {
    const float sa = step == 1 ? 1.0f : 448.0f / amax_a, sb = step == 1 ? 1.0f : 448.0f / amax_b;
    std::vector<float> qa(A), qb(B), want(M * N);
    for (float& x : qa) x = round_to_fp8(x * sa, Fp8Format::e4m3) / sa;
    for (float& x : qb) x = round_to_fp8(x * sb, Fp8Format::e4m3) / sb;
    gemm(false, true, M, N, K, 1.0f, qa.data(), K, qb.data(), K, 0.0f, want.data(), N);
    const std::vector<float>& got = step == 1 ? C1 : C2;
    for (int i = 0; i < M * N; ++i) EXPECT_EQ(got[i], want[i]) << "step " << step << " element " << i;
  }
  EXPECT_NE(C1, C2);  // the second step's scales really differ from the first's
}

TrainConfig fp8_config(int steps) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = steps;
  c.precision = Precision::fp8;
  return c;
}

TEST(Fp8Recipe, ResumeIsBitwise) {
  TrainConfig c = fp8_config(6);
  c.eval_every = 3, c.eval_batches = 1;  // an evaluation right before the save must not matter
  Trainer straight(c, testkit::temp_dir("fp8_straight"), nullptr);
  straight.quiet = true;
  straight.run();

  const std::string dir = testkit::temp_dir("fp8_split");
  TrainConfig first = c;
  first.stop_at = 3;
  std::vector<StepRecord> h;
  {
    Trainer t(first, dir, nullptr);
    t.quiet = true;
    t.run();
    ASSERT_EQ(t.step(), 3);
    h = t.history();
  }
  const size_t linears = size_t(c.model.n_layers) * 4 + 1;
  size_t saved = 0;
  for (const std::string& name : ShardedCheckpointReader(step_dir_path(dir, 3)).tensor_names())
    saved += name.rfind("fp8/", 0) == 0;
  EXPECT_EQ(saved, 6 * linears);
  Trainer second(c, dir, nullptr);
  second.quiet = true;
  ASSERT_EQ(second.step(), 3);
  second.run();
  h.insert(h.end(), second.history().begin(), second.history().end());
  const std::vector<StepRecord>& want = straight.history();
  ASSERT_EQ(h.size(), want.size());
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h[i].loss, want[i].loss) << "step " << i + 1;
    EXPECT_EQ(h[i].grad_norm, want[i].grad_norm) << "step " << i + 1;
  }
  const auto resumed = second.fp8_scaling()->keyed_logs(), full = straight.fp8_scaling()->keyed_logs();
  ASSERT_EQ(resumed.size(), full.size());
  size_t not_one = 0;
  for (const auto& [key, log] : resumed) {
    const Fp8Recipe::Log& all = full.at(key);
    ASSERT_EQ(log.scales.size(), 3u);
    ASSERT_EQ(all.scales.size(), 6u);
    for (size_t s = 0; s < 3; ++s) {
      EXPECT_EQ(log.scales[s], all.scales[3 + s]) << "resumed step " << s + 4;
      EXPECT_EQ(log.amaxes[s], all.amaxes[3 + s]) << "resumed step " << s + 4;
    }
    not_one += log.scales[0] != 1.0f;
  }
  EXPECT_EQ(not_one, resumed.size());  // restored, not started afresh
}

TEST(Fp8Recipe, PrecisionChangesOnResume) {
  for (const Precision from : {Precision::fp8, Precision::bf16}) {
    const Precision to = from == Precision::fp8 ? Precision::bf16 : Precision::fp8;
    const std::string dir = testkit::temp_dir("fp8_change");
    TrainConfig first = fp8_config(5);
    first.precision = from, first.stop_at = 3;
    double loss3 = 0;
    {
      Trainer t(first, dir, nullptr);
      t.quiet = true;
      t.run();
      loss3 = t.history().back().loss;
    }
    TrainConfig next = fp8_config(5);
    next.precision = to;
    Trainer t(next, dir, nullptr);
    t.quiet = true;
    ASSERT_EQ(t.step(), 3) << precision_name(from) << " -> " << precision_name(to);
    t.run();
    ASSERT_EQ(t.history().size(), 2u);
    for (const StepRecord& r : t.history()) EXPECT_TRUE(std::isfinite(r.loss) && std::isfinite(r.grad_norm));
    EXPECT_LT(t.history().back().loss, loss3) << precision_name(from) << " -> " << precision_name(to) << " trains on";
    if (to == Precision::fp8) {
      ASSERT_EQ(t.fp8_scaling()->tensors(), 6 * (size_t(next.model.n_layers) * 4 + 1));
      for (const Fp8Recipe::Log& log : t.fp8_scaling()->logs()) EXPECT_EQ(log.scales.at(0), 1.0f);  // afresh
    }
  }
}

}  // namespace
