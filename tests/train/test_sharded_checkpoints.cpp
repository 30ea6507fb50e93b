// The trainer's sharded checkpoints in one process: keep-K, asynchronous saves writing what
// synchronous ones write, a save killed half-way leaving the previous checkpoint to resume from,
// a failed background write reported, the old format refused, and sample/eval/export reading
// the parameters only.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "ckpt/saver.h"
#include "ckpt/sharded.h"
#include "ckpt/trained_model.h"
#include "test_data.h"
#include "train/trainer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny(int steps) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = testkit::tiny_data_dir();
  c.eval_every = 0;
  c.threads = 1;
  c.steps = steps;
  return c;
}

std::vector<StepRecord> train(const TrainConfig& c, const std::string& dir, int expect_start = 0) {
  Trainer t(c, dir);
  t.quiet = true;
  EXPECT_EQ(t.step(), expect_start);
  t.run();
  return t.history();
}

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void expect_same_losses(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b, size_t b_from) {
  ASSERT_EQ(a.size() + b_from, b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a[i].loss, &b[b_from + i].loss, sizeof(double)), 0) << "step " << a[i].step;
    EXPECT_EQ(std::memcmp(&a[i].grad_norm, &b[b_from + i].grad_norm, sizeof(double)), 0)
        << "step " << a[i].step;
  }
}

}  // namespace

TEST(ShardedCheckpoints, KeepsTheNewestKAndPointsLatestAtTheLast) {
  TrainConfig c = tiny(6);
  c.ckpt_every = 2;
  const std::string dir = testkit::temp_dir("keep");
  train(c, dir);
  EXPECT_FALSE(fs::exists(dir + "/step_2"));
  EXPECT_TRUE(fs::exists(dir + "/step_4/manifest.json"));
  EXPECT_TRUE(fs::exists(dir + "/step_6/manifest.json"));
  EXPECT_EQ(bytes_of(dir + "/latest"), "step_6\n");
  c.keep_checkpoints = 3;
  c.steps = 10;
  train(c, dir, 6);
  EXPECT_FALSE(fs::exists(dir + "/step_4"));
  for (int s : {6, 8, 10})
    EXPECT_TRUE(fs::exists(dir + "/step_" + std::to_string(s) + "/manifest.json")) << s;
}

TEST(ShardedCheckpoints, AsynchronousSavesWriteWhatSynchronousOnesWrite) {
  TrainConfig c = tiny(6);
  c.ckpt_every = 2;
  c.keep_checkpoints = 3;
  const std::string sync_dir = testkit::temp_dir("sync"), async_dir = testkit::temp_dir("async");
  const auto sync = train(c, sync_dir);
  c.ckpt_async = true;
  const auto async = train(c, async_dir);
  expect_same_losses(async, sync, 0);
  for (int s : {2, 4, 6}) {
    const std::string f = "/step_" + std::to_string(s) + "/rank_00000.bin";
    const std::string a = bytes_of(async_dir + f);
    EXPECT_GT(a.size(), 3 * ParamLayout(c.model).total() * sizeof(float)) << f;  // params, m and v
    EXPECT_EQ(a, bytes_of(sync_dir + f)) << f;
  }
}

TEST(ShardedCheckpoints, AKillInsideASaveLeavesThePreviousCheckpointToResumeFrom) {
  TrainConfig c = tiny(8);
  const std::string straight_dir = testkit::temp_dir("straight");
  const auto straight = train(c, straight_dir);
  // A run killed while writing step 4: its data file half-written, no manifest, `latest` still
  // naming step 2 (the writer renames it into place only after the manifest).
  c.ckpt_every = 2;
  c.stop_at = 4;
  const std::string dir = testkit::temp_dir("killed");
  train(c, dir);
  fs::remove(dir + "/step_4/manifest.json");
  fs::resize_file(dir + "/step_4/rank_00000.bin", fs::file_size(dir + "/step_4/rank_00000.bin") / 2);
  std::ofstream(dir + "/latest") << "step_2\n";
  EXPECT_NE(incomplete_reason(dir + "/step_4"), "");
  c.stop_at = 0;
  const auto resumed = train(c, dir, 2);
  expect_same_losses(resumed, straight, 2);
  EXPECT_TRUE(incomplete_reason(dir + "/step_8").empty());
}

TEST(ShardedCheckpoints, AFailedBackgroundWriteIsReportedAndPublishesNothing) {
  const std::string dir = testkit::temp_dir("failing");
  std::vector<float> x(100, 1.0f);
  const std::vector<SavePiece> pieces = {{"params/x", {10, 10}, Box{0, 10, 0, 10}, 0, 100, x.data()}};
  CheckpointInfo info;
  CheckpointSaver saver(dir, nullptr, 2, true);
  info.step = 1;
  saver.save(info, pieces);
  saver.finish();
  EXPECT_EQ(bytes_of(dir + "/latest"), "step_1\n");
  saver.before_background_write = [](const std::string& step_dir) {
    throw std::runtime_error("no space left on the device of " + step_dir);
  };
  info.step = 2;
  saver.save(info, pieces);  // returns at once; the failure surfaces when the save completes
  try {
    saver.finish();
    ADD_FAILURE() << "the failed background write went unnoticed";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("in the background"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no space left on the device of " + dir + "/step_2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir + "/step_2/manifest.json"));
  EXPECT_EQ(bytes_of(dir + "/latest"), "step_1\n");
  EXPECT_EQ(find_latest_complete(dir)->step, 1);
}

TEST(ShardedCheckpoints, TheOldSingleFileFormatIsRefused) {
  const TrainConfig c = tiny(2);
  const std::string dir = testkit::temp_dir("old");
  // The old format's magic and version 1, all of such a file that the refusal reads.
  std::ofstream(dir + "/checkpoint.bin", std::ios::binary) << std::string("FFCHKPNT\x01\0\0\0", 12);
  try {
    Trainer t(c, dir);
    ADD_FAILURE() << "an old checkpoint was silently ignored";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("old single-file format"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_trained_model(dir, 1), std::runtime_error);
}

TEST(ShardedCheckpoints, SampleEvalAndExportReadOnlyTheParameters) {
  TrainConfig c = tiny(2);
  const std::string dir = testkit::temp_dir("params-only");
  Trainer t(c, dir);
  t.quiet = true;
  t.run();
  const std::vector<float> want = t.full_params();
  const TrainedModel m = load_trained_model(dir, 1);
  ASSERT_EQ(m.params.size(), want.size());
  EXPECT_EQ(std::memcmp(m.params.data(), want.data(), want.size() * sizeof(float)), 0);
  // The data file holds 12 bytes per parameter (params, m, v); loading reads the 4 of params
  // (and the 64-byte header), never the moments.
  const uint64_t file = fs::file_size(dir + "/step_2/rank_00000.bin");
  EXPECT_GT(file, 12 * want.size());
  EXPECT_LE(m.bytes_read, 4 * want.size() + 64);
  EXPECT_GE(m.bytes_read, 4 * want.size());
}
