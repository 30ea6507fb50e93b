// metrics.jsonl after a resume holds each step once (issue 10): the rows a killed run wrote after
// its last checkpoint are dropped when the run resumes from that checkpoint.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_data.h"
#include "train/trainer.h"

using namespace ff;

TEST(MetricsResume, EachStepOnceAfterAResume) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = testkit::tiny_data_dir();
  c.eval_every = 0;
  c.steps = 4;
  c.stop_at = 2;  // the checkpoint a killed run left
  const std::string dir = testkit::temp_dir("metrics_resume");
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
  c.stop_at = 0;
  Trainer t(c, dir);
  t.quiet = true;
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
