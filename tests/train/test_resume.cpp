// Resume: 20 steps straight equal 10 steps + resume + 10 steps, bit for bit (losses and weights).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

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
// Trains in dir to c.steps; returns the step it started (resumed) from.
int train_to_the_end(const TrainConfig& c, const std::string& dir) {
  Trainer t(c, dir);
  t.quiet = true;
  const int from = t.step();
  t.run();
  return from;
}
// A finished run of 6 steps, whose config c receives: the folder a resume test continues.
std::string six_step_run(const char* tag, TrainConfig& c) {
  c = tiny(testkit::tiny_data_dir());
  c.steps = 6;
  const std::string dir = testkit::temp_dir(tag);
  EXPECT_EQ(train_to_the_end(c, dir), 0);
  return dir;
}
// metrics.jsonl's lr column by step (the last row of a step wins, as a resume rewrites them).
std::map<int, double> lr_by_step(const std::string& run_dir) {
  std::ifstream f(run_dir + "/metrics.jsonl");
  std::map<int, double> out;
  for (std::string line; std::getline(f, line);) {
    const auto rec = nlohmann::json::parse(line);
    if (rec.contains("lr")) out[rec["step"].get<int>()] = rec["lr"].get<double>();
  }
  return out;
}
// The schedule written out independently: linear warm-up to peak over w steps, then half a cosine
// over the next total - w steps down to peak x floor, then the floor.
double expected_lr(int step, double peak, double floor, int w, int total) {
  if (step <= w) return peak * step / w;
  const double progress = std::min(1.0, double(step - w) / double(total - w));
  return peak * (floor + (1 - floor) * 0.5 * (1 + std::cos(3.14159265358979323846 * progress)));
}
void expect_lrs(const std::map<int, double>& got, int first, int last, int total, const TrainConfig& c,
                const char* what) {
  for (int k = first; k <= last; ++k) {
    ASSERT_TRUE(got.count(k)) << what << ": no metrics row for step " << k;
    const double want = expected_lr(k, c.lr, c.min_lr_ratio, c.warmup_steps, total);
    EXPECT_NEAR(got.at(k), want, 1e-6 * want) << what << ": step " << k;
  }
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
  for (size_t i = 0; i < history.size(); ++i)
    EXPECT_EQ(history[i].lr, straight.history()[i].lr) << "step " << i + 1;
  const std::vector<float> a = second.full_params(), b = straight.full_params();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // Training did something: the loss fell.
  EXPECT_LT(straight.history().back().loss, straight.history().front().loss - 0.5);
}

// A run of 6 steps resumed with steps = 9: before, the cosine restarted over 9 steps and lr jumped
// up at step 7. The schedule's length is the run's first steps, so steps 7 to 9 train at its floor.
TEST(Resume, LargerStepsKeepsTheScheduleAndTrainsOnAtItsFloor) {
  TrainConfig c;
  const std::string dir = six_step_run("longer", c);
  TrainConfig longer = c;
  longer.steps = 9;
  EXPECT_EQ(train_to_the_end(longer, dir), 6);
  const std::map<int, double> lr = lr_by_step(dir);
  expect_lrs(lr, 1, 9, 6, c, "kept schedule");
  for (int k = c.warmup_steps + 1; k <= 9; ++k) EXPECT_LE(lr.at(k), lr.at(k - 1)) << "lr rose at step " << k;
}

// A new length is a named choice: lr_schedule_steps = 9 re-plans the cosine over 9 steps from the
// resume on (lr moves to that cosine at once), and a later resume keeps 9, the length recorded.
TEST(Resume, LrScheduleStepsReplansTheScheduleAndIsKept) {
  TrainConfig c;
  const std::string dir = six_step_run("replan", c);
  TrainConfig replanned = c;
  replanned.steps = 9, replanned.lr_schedule_steps = 9;
  EXPECT_EQ(train_to_the_end(replanned, dir), 6);
  TrainConfig again = c;
  again.steps = 12;
  EXPECT_EQ(train_to_the_end(again, dir), 9);
  const std::map<int, double> lr = lr_by_step(dir);
  expect_lrs(lr, 1, 6, 6, c, "first run");
  expect_lrs(lr, 7, 12, 9, c, "re-planned to 9 steps, then kept");
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
