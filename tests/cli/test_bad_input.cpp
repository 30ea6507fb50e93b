// Bad input: each case exits non-zero with a message naming the cause and the fix, and never
// overwrites a good checkpoint.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {
std::string tiny_train(const std::string& out, const std::string& extra = "") {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " +
         out + " --eval-every 0 " + extra;
}

// A finished 5-step run whose checkpoint the failing commands must leave alone.
std::string good_run() {
  std::string out = temp_dir("good");
  CliResult r = run_fivefold(tiny_train(out, "--steps 5"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out;
}

void expect_failure(const CliResult& r, std::initializer_list<const char*> words) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const char* w : words) EXPECT_NE(r.output.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.output;
}
}  // namespace

TEST(BadInput, MissingDataFolder) {
  std::string out = temp_dir("nodata");
  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data /nonexistent/folder --out " + out);
  expect_failure(r, {"/nonexistent/folder/tokenizer.model", "is missing", "fivefold prepare"});
  EXPECT_FALSE(fs::exists(out + "/checkpoint.bin"));
}

TEST(BadInput, UnknownConfigKey) {
  CliResult r = run_fivefold(tiny_train(temp_dir("key"), "--learning-rate 0.1"));
  expect_failure(r, {"unknown config key 'learning-rate'", "fivefold train --help"});
}

TEST(BadInput, ShapeThatDoesNotDivide) {
  CliResult r = run_fivefold(tiny_train(temp_dir("shape"), "--n-heads 3"));
  expect_failure(r, {"dim (64) must be divisible by n_heads (3)"});
  r = run_fivefold(tiny_train(temp_dir("shape"), "--n-kv-heads 3"));
  expect_failure(r, {"n_heads (4) must be divisible by n_kv_heads (3)"});
}

TEST(BadInput, TensorParallelShapeThatDoesNotDivide) {
  CliResult r = run_fivefold(tiny_train(temp_dir("tp"), "--tp 3"));
  expect_failure(r, {"n_heads (4) must be divisible by tp (3)"});
  r = run_fivefold(tiny_train(temp_dir("tp"), "--tp 4 --ffn-dim 150"));
  expect_failure(r, {"ffn_dim (150) must be divisible by tp (4)"});
  r = run_fivefold(tiny_train(temp_dir("tp"), "--tp 4 --sp true --seq-len 30"));
  expect_failure(r, {"seq_len (30) must be divisible by tp (4)", "sp = true"});
  r = run_fivefold(tiny_train(temp_dir("tp"), "--sp true"));
  expect_failure(r, {"sp = true needs tp > 1"});
  // A shape that fits, on a rank count that does not.
  r = run_fivefold(tiny_train(temp_dir("tp"), "--tp 2"));
  expect_failure(r, {"tp (2)", "1 ranks"});
}

TEST(BadInput, PipelineThatCannotBeScheduled) {
  CliResult r = run_fivefold(tiny_train(temp_dir("pp"), "--pp 2 --grad-accum 1"));
  expect_failure(r, {"1f1b schedule needs grad_accum (micro-batches, 1) >= pp (2)"});
  r = run_fivefold(tiny_train(temp_dir("pp"), "--pp 2 --schedule interleaved --chunks 2 --grad-accum 3 --n-layers 4"));
  expect_failure(r, {"microbatches (3) to be a multiple of stages (2)"});
  r = run_fivefold(tiny_train(temp_dir("pp"), "--pp 2 --schedule interleaved --chunks 2 --grad-accum 4"));
  expect_failure(r, {"n_layers (2) must be at least pp x chunks = 2 x 2"});
  r = run_fivefold(tiny_train(temp_dir("pp"), "--pp 2 --schedule zigzag"));
  expect_failure(r, {"config key 'schedule'", "gpipe | 1f1b | interleaved | zb-h1", "zigzag"});
  r = run_fivefold(tiny_train(temp_dir("pp"), "--chunks 2"));
  expect_failure(r, {"chunks = 2 needs pp > 1"});
}

TEST(BadInput, VocabMismatchBetweenTokenizerAndConfigOrCheckpoint) {
  CliResult r = run_fivefold(tiny_train(temp_dir("vocab"), "--vocab-size 500"));
  expect_failure(r, {"vocab_size is 500", "has 320 tokens"});

  std::string run = good_run();
  // A tokenizer of another size beside the checkpoint.
  std::string other = temp_dir("othertok");
  write_corpus_text(other + "/c.txt", 500, 3);
  CliResult p = run_fivefold("prepare --text " + other + "/c.txt --vocab 300 --out " + other + "/p");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  fs::copy_file(other + "/p/tokenizer.model", run + "/tokenizer.model", fs::copy_options::overwrite_existing);
  r = run_fivefold("sample --ckpt " + run + " --prompt And --max-tokens 5");
  expect_failure(r, {"vocabulary mismatch", "320 tokens", "has 300"});
}

TEST(BadInput, CorruptShard) {
  std::string data = temp_dir("corrupt-data");
  fs::copy(tiny_data_dir(), data);
  flip_byte(data + "/train.bin");
  std::string out = temp_dir("corrupt-out");
  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + data + " --out " + out);
  expect_failure(r, {"train.bin", "fivefold prepare"});
  EXPECT_FALSE(fs::exists(out + "/checkpoint.bin"));
}

TEST(BadInput, CorruptCheckpointIsRefusedAndKept) {
  std::string run = good_run();
  flip_byte(run + "/checkpoint.bin");
  const std::string damaged = read_file(run + "/checkpoint.bin");
  CliResult r = run_fivefold("sample --ckpt " + run + " --prompt And --max-tokens 5");
  expect_failure(r, {"checkpoint.bin", "damaged"});
  r = run_fivefold(tiny_train(run, "--steps 10"));
  expect_failure(r, {"checkpoint.bin", "damaged"});
  EXPECT_EQ(read_file(run + "/checkpoint.bin"), damaged);  // nothing wrote over it
}

TEST(BadInput, NanLossStopsWithoutTouchingTheCheckpoint) {
  std::string run = good_run();
  const std::string good = read_file(run + "/checkpoint.bin");
  CliResult r = run_fivefold(tiny_train(run, "--steps 10 --lr 1e30 --grad-clip 0"));
  expect_failure(r, {"loss became", "lower lr"});
  EXPECT_EQ(read_file(run + "/checkpoint.bin"), good);
}

TEST(BadInput, CheckpointOfAnotherModelIsNotResumed) {
  std::string run = good_run();
  const std::string good = read_file(run + "/checkpoint.bin");
  CliResult r = run_fivefold(tiny_train(run, "--steps 10 --dim 128"));
  expect_failure(r, {"different model", "dim 64 vs 128", "new --out folder"});
  EXPECT_EQ(read_file(run + "/checkpoint.bin"), good);
}
