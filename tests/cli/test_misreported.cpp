// Input that a run used to accept and then misreport: an fp16 loss scale, an init or warmup that
// defeats training, a run that skips most steps; and messages that named the wrong cause. Each
// case names the key, the value, the allowed range and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bad_input_fixtures.h"
#include "io/tokens/token_shard.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {
void expect_not_said(const CliResult& r, const char* words) {
  EXPECT_EQ(r.output.find(words), std::string::npos) << "'" << words << "' should not be in:\n" << r.output;
}
}  // namespace

TEST(Misreported, Fp16LossScaleOutsideItsRangeIsRefusedByName) {
  for (const char* scale : {"1e30", "1e-30"}) {
    const std::string out = temp_dir("scale");
    CliResult r = run_fivefold(tiny_train(out, std::string("--precision fp16 --steps 3 --loss-scale-init ") + scale));
    expect_failure(r, {"loss_scale_init (", "between 1 and 16777216", "65536 is usual"});
    expect_not_said(r, "RMSNorm");
    EXPECT_FALSE(fs::exists(out + "/latest"));
  }
}

TEST(Misreported, InitStdAndWarmupThatDefeatTrainingAreWarnedByName) {
  CliResult r = run_fivefold(tiny_train(temp_dir("warn"), "--steps 3 --init-std 10 --warmup-steps 100"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* w : {"warning: config: init_std = 10 is large for dim = 64", "0.02 is usual",
                        "warning: config: warmup_steps = 100 >= steps = 3", "never reaches lr"})
    EXPECT_NE(r.output.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.output;
  // The usual values say nothing.
  r = run_fivefold(tiny_train(temp_dir("quiet"), "--steps 3"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_not_said(r, "warning: config:");
}

// on_nonfinite = skip at a learning rate that breaks every step: the run stops non-zero at 8
// skipped steps in a row, saving nothing, instead of exiting 0 with a checkpoint of a dead run.
TEST(Misreported, SkippingMostStepsEndsTheRunWithAnError) {
  const std::string out = temp_dir("skips");
  CliResult r = run_fivefold(tiny_train(out, "--steps 20 --on-nonfinite skip --lr 1e3 --grad-clip 0"));
  expect_failure(r, {"8 steps in a row were skipped", "on_nonfinite = skip stops the run", "lower lr (now 1000)"});
  EXPECT_FALSE(fs::exists(out + "/latest"));
}

TEST(Misreported, NoConfigSaysTheConfigIsMissingAndLeavesNoFolder) {
  const std::string parent = temp_dir("nocfg");
  CliResult r = run_fivefold("train --data " + tiny_data_dir() + " --out " + parent + "/run");
  expect_failure(r, {"the model's shape is not set", "--config", "configs/tiny.toml", "--init-from DIR"});
  expect_not_said(r, "must be positive");
  EXPECT_FALSE(fs::exists(parent + "/run")) << "a failed start left its empty run folder";
  r = run_fivefold("train --config " + fs::path(config_path("tiny.toml")).parent_path().string() + " --data " +
                   tiny_data_dir() + " --out " + parent + "/run");
  expect_failure(r, {"is a folder", "a TOML file such as configs/tiny.toml"});
  EXPECT_FALSE(fs::exists(parent + "/run"));
  // A folder that was there before the failed start stays.
  fs::create_directories(parent + "/kept");
  r = run_fivefold("train --data " + tiny_data_dir() + " --out " + parent + "/kept");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(fs::exists(parent + "/kept"));
}

TEST(Misreported, EmptyValidationShardNamesTheFileAndEvalEvery) {
  const std::string data = temp_dir("emptyval") + "/prepared";
  fs::copy(tiny_data_dir(), data);
  const std::string val = data + "/val-00000.bin";
  const ff::TokenShardInfo info = ff::read_token_shard_info(val);
  ff::write_token_shard(val, {}, int(info.vocab_size), info.tokenizer_checksum);
  const std::string train = "train --config " + config_path("tiny.toml") + " --data " + data + " --steps 2 --out ";
  CliResult r = run_fivefold(train + temp_dir("ev") + " --eval-every 5");
  expect_failure(r, {"val-00000.bin", "eval_every = 5", "--val-docs", "eval_every = 0"});
  // Never read without evaluation: the run goes on.
  r = run_fivefold(train + temp_dir("ev0") + " --eval-every 0");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Misreported, PlanNamesTheBatchWhenItCannotBeSplit) {
  CliResult r = run_fivefold("plan --config " + config_path("tiny.toml") + " --vocab-size 320 --ranks 16384 --global-batch 1");
  expect_failure(r, {"global batch of 1 sequences does not divide", "--global-batch as a multiple of"});
  expect_not_said(r, "more ranks");
}

TEST(Misreported, NonfiniteStopCitesOnlyARealCheckpointAndGivenAdvice) {
  // A fresh run has no checkpoint to cite; grad_clip is set (1.0), so it is not advised.
  CliResult r = run_fivefold(tiny_train(temp_dir("nf"), "--steps 5 --lr 1e30"));
  expect_failure(r, {"loss became", "holds no checkpoint of this run yet", "lower lr", "grad_clip is 1"});
  expect_not_said(r, "set grad_clip");
  expect_not_said(r, "from before it");
  // Resuming a finished run: the checkpoint it cites is the one that exists; grad_clip off is advised.
  const std::string run = good_run();
  r = run_fivefold(tiny_train(run, "--steps 10 --lr 1e30 --grad-clip 0"));
  expect_failure(r, {"set grad_clip"});
  const std::string cited = "the last one (" + run + "/step_5) is from before it";
  EXPECT_NE(r.output.find(cited), std::string::npos) << r.output;
}
