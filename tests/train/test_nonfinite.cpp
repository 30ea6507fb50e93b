// Non-finite steps: the lr = 1e3 run that used to train a dead model for four steps and checkpoint
// it stops at the first vanished/non-finite gradient norm, names where the step went bad, and
// leaves only a checkpoint from before the blow-up.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "comm/comm_world.h"
#include "test_data.h"
#include "train/nonfinite.h"
#include "train/trainer.h"

using namespace ff;

namespace {
TrainConfig blow_up_config() {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = testkit::tiny_data_dir();
  c.eval_every = 0;
  c.steps = 20;
  c.lr = 1e3f;
  c.ckpt_every = 1;
  return c;
}
}  // namespace

TEST(Nonfinite, StepChecks) {
  EXPECT_FALSE(step_is_nonfinite(6.2, 1.5));
  EXPECT_TRUE(step_is_nonfinite(NAN, 1.5));
  EXPECT_TRUE(step_is_nonfinite(6.2, INFINITY));
  EXPECT_TRUE(step_is_nonfinite(6.2, 0.0));  // a vanished gradient: an overflow zeroed it
  EXPECT_FALSE(step_is_nonfinite(6.2, 0.0, false));  // async DP before its first delayed gradient
  EXPECT_TRUE(step_is_nonfinite(6.2, NAN, false));
}

TEST(Nonfinite, LossSpikeAgainstTheRecentMedian) {
  LossSpikeWatch w(5);
  EXPECT_EQ(w.observe(6.0), 0);
  EXPECT_EQ(w.observe(5.0), 0);
  EXPECT_EQ(w.observe(7.0), 0);
  EXPECT_EQ(w.observe(29.0), 0);            // 29 < 5 x median 6
  EXPECT_DOUBLE_EQ(w.observe(100.0), 7.0);  // median of {5, 6, 7, 29}: 7 (the spike itself not kept)
  LossSpikeWatch off(0);
  EXPECT_EQ(off.observe(1), 0);
  EXPECT_EQ(off.observe(1e9), 0);
}

TEST(Nonfinite, LargeLrStopsLocatesAndKeepsTheLastHealthyCheckpoint) {
  const std::string dir = testkit::temp_dir("blowup");
  std::string message;
  int steps_done = 0;
  {
    Trainer t(blow_up_config(), dir);
    t.quiet = true;
    try {
      t.run();
    } catch (const AgreedError& e) {
      message = e.what();
    }
    steps_done = t.step();
    ASSERT_GE(t.history().size(), 2u);
    // Step 2 is the blow-up (loss ~4e6): a spike against step 1's loss.
    EXPECT_GT(t.history()[1].spike_median, 0);
  }
  ASSERT_FALSE(message.empty()) << "the run did not stop";
  // Stopped at the first step whose gradient norm vanished, before its update.
  EXPECT_NE(message.find("step 3: the gradient norm is exactly 0"), std::string::npos) << message;
  EXPECT_EQ(steps_done, 2);
  EXPECT_NE(message.find("micro-batch 0, layer 1, input_layernorm: 1/rms is 0"), std::string::npos)
      << message;
  EXPECT_NE(message.find("on rank 0"), std::string::npos) << message;
  // Every metrics row is a step before the stop.
  std::ifstream m(dir + "/metrics.jsonl");
  int rows = 0;
  for (std::string line; std::getline(m, line);) ++rows;
  EXPECT_EQ(rows, 2);

  // The checkpoint left is step 1's (step 2's state followed the spike and was never saved): the
  // resumed model is alive, its loss is not ln V.
  TrainConfig again = blow_up_config();
  again.lr = 1e-3f;
  Trainer resumed(again, dir);
  resumed.quiet = true;
  EXPECT_EQ(resumed.step(), 1);
  const double ln_v = std::log(double(resumed.config().model.vocab_size));
  const double val = resumed.evaluate();
  EXPECT_GT(std::fabs(val - ln_v), 0.05) << val << " vs ln V " << ln_v;
}

TEST(Nonfinite, SkipKeepsTheWeightsAndGoesOn) {
  TrainConfig c = blow_up_config();
  c.on_nonfinite = NonfiniteAction::skip;
  c.steps = 5;
  c.ckpt_every = 0;
  Trainer t(c, testkit::temp_dir("skip"));
  t.quiet = true;
  t.run();
  ASSERT_EQ(t.history().size(), 5u);
  EXPECT_FALSE(t.history()[1].skipped);
  const std::vector<float> before = t.full_params();
  for (int s = 2; s < 5; ++s) EXPECT_TRUE(t.history()[size_t(s)].skipped) << "step " << s + 1;
  // A skipped step leaves the weights: one more (skipped) step changes nothing.
  t.train_step();
  EXPECT_TRUE(t.history().back().skipped);
  EXPECT_EQ(t.full_params(), before);
}
