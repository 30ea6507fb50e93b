// Resume: 20 steps straight equal 10 steps + resume + 10 steps, bit for bit (losses and weights).
#include <gtest/gtest.h>

#include <cstring>

#include "test_data.h"
#include "train/trainer.h"

using namespace ff;

namespace {
TrainConfig tiny(const std::string& data) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = data;
  c.eval_every = 0;
  return c;
}
}  // namespace

TEST(Resume, TwentyStepsEqualTenPlusResumePlusTen) {
  const std::string& data = testkit::tiny_data_dir();
  TrainConfig cfg = tiny(data);
  cfg.steps = 20;

  Trainer straight(cfg, testkit::temp_dir("straight"));
  straight.quiet = true;
  straight.run();

  const std::string split_dir = testkit::temp_dir("split");
  TrainConfig first = cfg;
  first.stop_at = 10;
  std::vector<StepRecord> history;
  {
    Trainer t(first, split_dir);
    t.quiet = true;
    t.run();
    EXPECT_EQ(t.step(), 10);
    history = t.history();
  }
  Trainer second(cfg, split_dir);
  second.quiet = true;
  EXPECT_EQ(second.step(), 10);
  second.run();
  history.insert(history.end(), second.history().begin(), second.history().end());

  ASSERT_EQ(history.size(), straight.history().size());
  for (size_t i = 0; i < history.size(); ++i)
    EXPECT_EQ(std::memcmp(&history[i].loss, &straight.history()[i].loss, sizeof(double)), 0)
        << "step " << i + 1 << ": " << history[i].loss << " vs " << straight.history()[i].loss;
  const std::vector<float> a = second.full_params(), b = straight.full_params();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // Training did something: the loss fell.
  EXPECT_LT(straight.history().back().loss, straight.history().front().loss - 0.5);
}

TEST(GradAccum, TrainerFourByTwoMatchesEightByOne) {
  TrainConfig a = tiny(testkit::tiny_data_dir()), b = a;
  a.steps = b.steps = 3;
  a.micro_batch = 4, a.grad_accum = 2;
  b.micro_batch = 8, b.grad_accum = 1;
  Trainer ta(a, testkit::temp_dir("acc")), tb(b, testkit::temp_dir("big"));
  ta.quiet = tb.quiet = true;
  ta.run();
  tb.run();
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(ta.history()[i].loss / tb.history()[i].loss, 1.0, 1e-6) << "step " << i + 1;
}
