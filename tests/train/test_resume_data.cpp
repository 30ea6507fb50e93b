// The data check on resume compares contents, not path strings: before, the same folder written
// as DIR/ or reached through a symlink was refused as "another data folder", and a train shard
// replaced in place (a re-run prepare) resumed without a word. Each checkpoint now records every
// shard's checksum; another path to the same shards resumes, other shards under the same path are
// refused naming the shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fstream>

#include <nlohmann/json.hpp>

#include "../ckpt/rewrite_manifest.h"
#include "ckpt/sharded_run.h"
#include "io/tokens/token_shard.h"
#include "test_data.h"
#include "train/trainer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {
// A private copy of the tiny data folder, which the tests may alter.
std::string copy_of_tiny_data(const std::string& tag) {
  const fs::path to = fs::path(testkit::temp_dir(tag)) / "data";
  fs::copy(testkit::tiny_data_dir(), to, fs::copy_options::recursive);
  return to.string();
}
TrainConfig tiny(const std::string& data) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = data;
  c.eval_every = 0;
  c.steps = 4;
  return c;
}
// A run interrupted after step 2, as a killed job leaves it.
void train_two_of_four_steps(const std::string& data, const std::string& run_dir) {
  TrainConfig c = tiny(data);
  c.stop_at = 2;
  Trainer t(c, run_dir);
  t.quiet = true;
  t.run();
}
std::string resume_refusal(const std::string& data, const std::string& run_dir) {
  try {
    Trainer t(tiny(data), run_dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ResumeData, TheSameFolderByAnotherPathResumes) {
  const std::string data = copy_of_tiny_data("resume_data_paths");
  const std::string link = fs::path(data).parent_path() / "link_to_data";
  fs::create_directory_symlink(data, link);
  const std::string run_dir = testkit::temp_dir("resume_data_paths_run");
  train_two_of_four_steps(data, run_dir);
  for (const std::string& same : {data + "/", link}) {
    Trainer t(tiny(same), run_dir);  // threw "'data' was DIR and is now DIR/" before
    t.quiet = true;
    EXPECT_EQ(t.step(), 2) << same;
  }
  Trainer t(tiny(link), run_dir);
  t.quiet = true;
  t.run();
  EXPECT_EQ(t.step(), 4);
}

TEST(ResumeData, AReplacedTrainShardIsRefusedByName) {
  const std::string data = copy_of_tiny_data("resume_data_replaced");
  const std::string run_dir = testkit::temp_dir("resume_data_replaced_run");
  train_two_of_four_steps(data, run_dir);
  // A valid shard of the same tokenizer and vocabulary with other tokens: what a re-run prepare
  // on another corpus writes under the same name.
  const std::string shard = testkit::only_shard(data, "train");
  const TokenShardInfo info = read_token_shard_info(shard);
  std::vector<int32_t> tokens = read_token_shard(shard);
  std::reverse(tokens.begin(), tokens.end());
  write_token_shard(shard, tokens, int(info.vocab_size), info.tokenizer_checksum);
  const std::string why = resume_refusal(data, run_dir);
  ASSERT_FALSE(why.empty()) << "a replaced train shard resumed";
  EXPECT_NE(why.find(shard), std::string::npos) << why;
  EXPECT_NE(why.find("train shard 1"), std::string::npos) << why;
  EXPECT_NE(why.find("restore the shard"), std::string::npos) << why;
  EXPECT_NE(why.find("new --out folder"), std::string::npos) << why;
}

TEST(ResumeData, AnotherMixtureWeightIsRefused) {
  const std::string a = copy_of_tiny_data("resume_data_mix_a"), b = copy_of_tiny_data("resume_data_mix_b");
  const std::string run_dir = testkit::temp_dir("resume_data_mix_run");
  train_two_of_four_steps(a + ":1," + b + ":1", run_dir);
  const std::string why = resume_refusal(a + ":1," + b + ":3", run_dir);
  EXPECT_NE(why.find("had weight 0.5"), std::string::npos) << why;
  EXPECT_NE(why.find("now has 0.25"), std::string::npos) << why;
  // The same weights written differently are the same mixture.
  EXPECT_EQ(resume_refusal(a + "/:2," + b + ":2", run_dir), "");
}

// A checkpoint written before the record (no shard checksums, no schedule length) resumes as it
// did: the data by its path, and the schedule of the steps its config saved, so a larger steps
// trains on at the floor here too.
TEST(ResumeData, AnOlderCheckpointComparesThePathAndKeepsItsConfigsSchedule) {
  const std::string data = copy_of_tiny_data("resume_data_old");
  const std::string run_dir = testkit::temp_dir("resume_data_old_run");
  train_two_of_four_steps(data, run_dir);
  ff::testing::rewrite_manifest(step_dir_path(run_dir, 2), [](nlohmann::json& m) {
    ASSERT_TRUE(m["state"].contains("data_shards")) << m.dump();
    m["state"].erase("data_shards");
    m["state"].erase("lr_schedule_steps");
  });
  EXPECT_NE(resume_refusal(data + "/", run_dir).find("'data' was"), std::string::npos);
  TrainConfig longer = tiny(data);
  longer.steps = 6;
  Trainer t(longer, run_dir);
  t.quiet = true;
  EXPECT_EQ(t.step(), 2);
  t.run();
  std::ifstream metrics(run_dir + "/metrics.jsonl");
  int rows_at_the_floor = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto rec = nlohmann::json::parse(line);
    if (!rec.contains("lr") || rec["step"].get<int>() <= 4) continue;
    EXPECT_NEAR(rec["lr"].get<double>(), double(longer.lr) * longer.min_lr_ratio, 1e-9) << line;
    ++rows_at_the_floor;
  }
  EXPECT_EQ(rows_at_the_floor, 2);
}
