// Bad checkpoints at resume: a newest checkpoint with a flipped byte, a truncated data
// file or no manifest is passed over, naming the file and why, and the run continues from the
// previous complete one to exactly the state an undamaged run reaches; a damaged folder that once
// was complete is set aside as step_N.damaged, never deleted. With no earlier checkpoint to fall
// back to, resuming is refused and nothing is touched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {

// 10 steps, a checkpoint at 5 and 10 (keep_checkpoints = 2 keeps both).
std::string train_10(const std::string& out) {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out +
         " --steps 10 --ckpt-every 5 --eval-every 0 --threads 1";
}

// Each metrics.jsonl step row as (step, loss, grad_norm), the doubles printed exactly.
std::vector<std::string> step_rows(const std::string& run) {
  std::ifstream f(run + "/metrics.jsonl");
  std::vector<std::string> rows;
  for (std::string line; std::getline(f, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("step"))
      rows.push_back(j["step"].dump() + " " + j["loss"].dump() + " " + j["grad_norm"].dump());
  }
  return rows;
}

void expect_words(const CliResult& r, std::initializer_list<std::string> words) {
  for (const std::string& w : words)
    EXPECT_NE(r.output.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.output;
}

void truncate_by_one(const std::string& path) { fs::resize_file(path, fs::file_size(path) - 1); }

struct Damage {
  const char* name;
  std::function<void(const std::string& step_dir)> apply;
  std::vector<std::string> said;  // in the warning, besides the folder
  bool set_aside;                 // it had a manifest: kept as step_10.damaged
};

}  // namespace

TEST(CheckpointFallback, DamagedNewestResumesFromThePreviousToTheSameState) {
  const std::string base = temp_dir("fallback-base") + "/run";
  CliResult r = run_fivefold(train_10(base));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> rows = step_rows(base);
  ASSERT_EQ(rows.size(), 10u);
  const std::string final_shard = read_file(base + "/step_10/rank_00000.bin");
  ASSERT_FALSE(final_shard.empty());

  const std::vector<Damage> damages = {
      {"flipped byte", [](const std::string& d) { flip_byte(d + "/rank_00000.bin", 0.2); },
       {"rank_00000.bin: checksum mismatch", "resuming from the previous complete one"}, true},
      {"truncated data file", [](const std::string& d) { truncate_by_one(d + "/rank_00000.bin"); },
       {"rank_00000.bin has " + std::to_string(final_shard.size() - 1) + " bytes", "(truncated)"}, true},
      {"missing manifest", [](const std::string& d) { fs::remove(d + "/manifest.json"); },
       {"no manifest.json (the save did not finish)"}, false},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    const std::string run = temp_dir("fallback") + "/run";
    fs::copy(base, run, fs::copy_options::recursive);
    damage.apply(run + "/step_10");
    const std::string damaged_shard = read_file(run + "/step_10/rank_00000.bin");

    r = run_fivefold(train_10(run));  // the same command again, as the supervisor would
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_words(r, {run + "/step_10", run + "/step_5"});
    for (const std::string& w : damage.said) expect_words(r, {w});
    // Steps 6..10 ran again from step 5: the same losses and norms, bit for bit, each step once,
    // and the same final state.
    EXPECT_EQ(step_rows(run), rows);
    EXPECT_EQ(read_file(run + "/step_10/rank_00000.bin"), final_shard);
    EXPECT_EQ(read_file(run + "/latest"), "step_10\n");
    // The damaged folder is kept where no save deletes it, and said where; an unfinished save's is not.
    EXPECT_EQ(fs::exists(run + "/step_10.damaged"), damage.set_aside);
    if (damage.set_aside) {
      expect_words(r, {"kept as " + run + "/step_10.damaged"});
      EXPECT_EQ(read_file(run + "/step_10.damaged/rank_00000.bin"), damaged_shard);
    }
  }
}

TEST(CheckpointFallback, DamagedOnlyCheckpointIsRefusedAndKept) {
  const std::string run = temp_dir("fallback-only") + "/run";
  const std::string once = "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                           " --out " + run + " --steps 5 --eval-every 0 --threads 1";
  CliResult r = run_fivefold(once);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Truncated: a fresh start would delete it at its first save, so it is refused instead.
  truncate_by_one(run + "/step_5/rank_00000.bin");
  const std::string kept = read_file(run + "/step_5/rank_00000.bin");
  r = run_fivefold(once);
  EXPECT_NE(r.exit_code, 0) << r.output;
  expect_words(r, {"no complete checkpoint, only damaged ones", run + "/step_5", "rank_00000.bin has",
                   "(truncated)", "Restore them from a copy, or move them out of the run folder"});
  EXPECT_EQ(read_file(run + "/step_5/rank_00000.bin"), kept);
  EXPECT_FALSE(fs::exists(run + "/step_5.damaged"));
}
