// Resuming with a changed config: before, a run folder resumed with another seed, global batch or
// lr without a word and overwrote config.toml. Now each deliberate change is accepted and listed,
// and each change of the data order or of a step's meaning is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "train/resume_check.h"
#include "train/trainer.h"

using namespace ff;

namespace {
TrainConfig base() {
  TrainConfig c;
  c.data = "data/tiny";
  c.dp = 2, c.micro_batch = 4, c.grad_accum = 2, c.threads = 1;
  return c;
}
std::string refusal(const std::function<void(TrainConfig&)>& change) {
  TrainConfig now = base();
  change(now);
  try {
    check_resume_config(config_to_toml(base()), now, "RUN");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
std::string text_of(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
std::vector<ConfigChange> accepted(const std::function<void(TrainConfig&)>& change) {
  TrainConfig now = base();
  change(now);
  return check_resume_config(config_to_toml(base()), now, "RUN");
}
}  // namespace

TEST(ResumeCheck, RefusesWhatChangesTheDataOrderOrAStep) {
  EXPECT_NE(refusal([](TrainConfig& c) { c.seed = 7; }).find("'seed' was 1337 and is now 7"),
            std::string::npos);
  EXPECT_NE(refusal([](TrainConfig& c) {
              c.data = "data/other";
            }).find("'data' was data/tiny and is now data/other"),
            std::string::npos);
  const std::string mb = refusal([](TrainConfig& c) { c.micro_batch = 8; });
  EXPECT_NE(mb.find("global batch micro_batch x grad_accum x dp was 16 and is now 32 ('micro_batch' 4 -> 8)"),
            std::string::npos)
      << mb;
  EXPECT_NE(refusal([](TrainConfig& c) { c.grad_accum = 1; }).find("('grad_accum' 2 -> 1)"),
            std::string::npos);
  EXPECT_NE(refusal([](TrainConfig& c) { c.dp = 4; }).find("('dp' 2 -> 4)"), std::string::npos);
  EXPECT_NE(refusal([](TrainConfig& c) { c.seed = 7; }).find("new --out folder"), std::string::npos);
}

TEST(ResumeCheck, AcceptsDeliberateChangesAndNamesThem) {
  EXPECT_TRUE(accepted([](TrainConfig&) {}).empty());
  struct Case {
    const char* key;
    std::function<void(TrainConfig&)> change;
    const char* before;
    const char* after;
  };
  const std::vector<Case> cases = {
      {"lr", [](TrainConfig& c) { c.lr = 1e-3f; }, "0.0003", "0.001"},
      {"warmup_steps", [](TrainConfig& c) { c.warmup_steps = 20; }, "10", "20"},
      {"min_lr_ratio", [](TrainConfig& c) { c.min_lr_ratio = 0.5f; }, "0.1", "0.5"},
      {"steps", [](TrainConfig& c) { c.steps = 200; }, "100", "200"},
      {"zero", [](TrainConfig& c) { c.zero = 3; }, "0", "3"},
      {"tp", [](TrainConfig& c) { c.tp = 2; }, "1", "2"},
      {"pp", [](TrainConfig& c) { c.pp = 2; }, "1", "2"},
      {"schedule", [](TrainConfig& c) { c.schedule = PipeSchedule::gpipe; }, "1f1b", "gpipe"},
      {"recompute", [](TrainConfig& c) { c.recompute = Recompute::full; }, "none", "full"},
      {"threads", [](TrainConfig& c) { c.threads = 2; }, "1", "2"},
  };
  for (const Case& k : cases) {
    const auto changes = accepted(k.change);
    ASSERT_EQ(changes.size(), 1u) << k.key;
    EXPECT_EQ(changes[0].key, k.key);
    EXPECT_EQ(changes[0].before, k.before) << k.key;
    EXPECT_EQ(changes[0].after, k.after) << k.key;
  }
  // The global batch split differently: dp 2 x 4 -> dp 1 x 8 reads the same sequences.
  const auto split = accepted([](TrainConfig& c) { c.dp = 1, c.micro_batch = 8; });
  EXPECT_EQ(describe_changes(split), "dp 2 -> 1, micro_batch 4 -> 8");
}

// One run folder for both checks of a resume (a trainer costs seconds): the config check, and
// metrics.jsonl holding each step once: the rows a killed run wrote after its last
// checkpoint are dropped when the run resumes from it.
TEST(ResumeCheck, TrainerKeepsTheOldConfigRefusesASeedAndLogsEachStepOnce) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = testkit::tiny_data_dir();
  c.eval_every = 0;
  c.steps = 4;
  c.stop_at = 2;  // the checkpoint a killed run left
  const std::string dir = testkit::temp_dir("resume_check");
  {
    Trainer t(c, dir);
    t.quiet = true;
    t.run();
  }
  {
    // What the killed run logged after that checkpoint: steps 3 and 4, and a torn line.
    std::ofstream m(dir + "/metrics.jsonl", std::ios::app);
    m << "{\"step\":3,\"loss\":1}\n{\"step\":4,\"loss\":1}\n{\"step\":5,\"lo";
  }
  TrainConfig seed = c;
  seed.stop_at = 0, seed.seed = 99;
  try {
    Trainer t(seed, dir);
    FAIL() << "a changed seed was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'seed' was 1337 and is now 99"), std::string::npos) << e.what();
  }
  TrainConfig lr = c;
  lr.stop_at = 0, lr.lr = 2e-3f;
  Trainer t(lr, dir);
  t.quiet = true;
  EXPECT_EQ(t.step(), 2);
  const std::string old = text_of(dir + "/config.step_2.toml");
  EXPECT_NE(old.find("lr = 0.001 "), std::string::npos);
  EXPECT_NE(text_of(dir + "/config.toml").find("lr = 0.002 "), std::string::npos);
  t.run();
  std::ifstream m(dir + "/metrics.jsonl");
  std::vector<int> steps;
  for (std::string line; std::getline(m, line);) {
    const auto rec = nlohmann::json::parse(line);  // throws on a torn line left in the middle
    steps.push_back(rec["step"].get<int>());
    EXPECT_NE(rec["loss"].get<double>(), 1.0) << "a stale row of the killed run survived";
  }
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3, 4}));
}
