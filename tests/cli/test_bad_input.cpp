// Bad input: each case exits non-zero with a message naming the cause and the fix, and never
// overwrites a good checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "bad_input_fixtures.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {
// Every file of the run's checkpoints (step_N folders and the `latest` pointer), concatenated in
// name order: equal before and after means nothing wrote over them.
std::string checkpoint_bytes(const std::string& run) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(run))
    if (e.is_regular_file() && (e.path().filename() == "latest" || e.path().parent_path().filename().string().rfind("step_", 0) == 0))
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const std::string& f : files) all += f + "\n" + read_file(f);
  return all;
}

}  // namespace

TEST(BadInput, MissingDataFolder) {
  std::string out = temp_dir("nodata");
  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data /nonexistent/folder --out " + out);
  expect_failure(r, {"/nonexistent/folder/tokenizer.model", "is missing", "fivefold prepare"});
  EXPECT_FALSE(fs::exists(out + "/latest"));
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
  CliResult p = run_fivefold("prepare --one-doc-per-line --text " + other + "/c.txt --vocab 300 --out " + other + "/p");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  fs::copy_file(other + "/p/tokenizer.model", run + "/tokenizer.model", fs::copy_options::overwrite_existing);
  r = run_fivefold("sample --ckpt " + run + " --prompt And --max-tokens 5");
  expect_failure(r, {"vocabulary mismatch", "320 tokens", "has 300"});
}

TEST(BadInput, CorruptShard) {
  std::string data = temp_dir("corrupt-data");
  fs::copy(tiny_data_dir(), data);
  flip_byte(data + "/train-00000.bin");
  std::string out = temp_dir("corrupt-out");
  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + data + " --out " + out);
  expect_failure(r, {"train-00000.bin", "fivefold prepare"});
  EXPECT_FALSE(fs::exists(out + "/latest"));
}

TEST(BadInput, CorruptCheckpointIsRefusedAndKept) {
  std::string run = good_run();
  flip_byte(run + "/step_5/rank_00000.bin", 0.2);  // in the parameters, which sample reads too
  const std::string damaged = checkpoint_bytes(run);
  CliResult r = run_fivefold("sample --ckpt " + run + " --prompt And --max-tokens 5");
  expect_failure(r, {"rank_00000.bin", "damaged"});
  r = run_fivefold(tiny_train(run, "--steps 10"));
  expect_failure(r, {"rank_00000.bin", "damaged"});
  EXPECT_EQ(checkpoint_bytes(run), damaged);  // nothing wrote over it
}

TEST(BadInput, NanLossStopsWithoutTouchingTheCheckpoint) {
  std::string run = good_run();
  const std::string good = checkpoint_bytes(run);
  CliResult r = run_fivefold(tiny_train(run, "--steps 10 --lr 1e30 --grad-clip 0"));
  expect_failure(r, {"loss became", "lower lr"});
  EXPECT_EQ(checkpoint_bytes(run), good);
}

TEST(BadInput, CheckpointOfAnotherModelIsNotResumed) {
  std::string run = good_run();
  const std::string good = checkpoint_bytes(run);
  CliResult r = run_fivefold(tiny_train(run, "--steps 10 --dim 128"));
  expect_failure(r, {"different model", "dim 64 vs 128", "new --out folder"});
  EXPECT_EQ(checkpoint_bytes(run), good);
}

namespace {
// A prepared folder of another corpus: same or another vocabulary, always another tokenizer.
std::string other_prepared(const std::string& tag, int vocab) {
  std::string other = temp_dir(tag);
  write_corpus_text(other + "/c.txt", 500, 3);
  CliResult p = run_fivefold("prepare --one-doc-per-line --text " + other + "/c.txt --vocab " + std::to_string(vocab) +
                             " --out " + other + "/p");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  return other + "/p";
}
}  // namespace

// A 400-token shard under a 320-token model used to read past the logits (ASan) and print
// loss -nan with exit 0; a 300-token shard printed a plausible loss.
TEST(BadInput, EvalRefusesAShardOfAnotherVocabulary) {
  std::string run = good_run();
  for (int vocab : {400, 300}) {
    const std::string data = other_prepared("evalvocab" + std::to_string(vocab), vocab);
    CliResult r = run_fivefold("eval --ckpt " + run + " --data " + data + "/val-00000.bin");
    expect_failure(r, {"val-00000.bin", ("vocabulary of " + std::to_string(vocab)).c_str(), "has 320"});
    EXPECT_EQ(r.output.find("loss"), std::string::npos) << r.output;
  }
  CliResult ok = run_fivefold("eval --ckpt " + run + " --data " + tiny_data_dir() + "/val-00000.bin");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// A tokenizer of the same size but other pieces used to pass every check.
TEST(BadInput, ReplacedTokenizerOfTheSameSizeIsNoticed) {
  std::string run = good_run();
  const std::string other = other_prepared("sametok", 320);
  fs::copy_file(other + "/tokenizer.model", run + "/tokenizer.model", fs::copy_options::overwrite_existing);
  CliResult r = run_fivefold("sample --ckpt " + run + " --prompt And --max-tokens 5");
  expect_failure(r, {"tokenizer mismatch", "tokenizer.model", "checksum differs"});

  std::string data = temp_dir("swapped-data");
  fs::copy(tiny_data_dir(), data);
  fs::copy_file(other + "/tokenizer.model", data + "/tokenizer.model", fs::copy_options::overwrite_existing);
  r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + data + " --out " +
                   temp_dir("sw"));
  expect_failure(r, {"train-00000.bin", "different tokenizer than"});
  // A consistent data folder of another tokenizer does not continue a run trained on the first.
  std::string resumed = good_run();
  const std::string good = checkpoint_bytes(resumed);
  r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + other + " --out " + resumed +
                   " --eval-every 0 --steps 10");
  expect_failure(r, {"another tokenizer", "checksums differ"});
  EXPECT_EQ(checkpoint_bytes(resumed), good);
}

// Validation gaps on the command line: values out of range, flags without a value.
TEST(BadInput, CommandLineValuesOutOfRange) {
  std::string run = good_run();
  for (const char* batch : {"-1", "0", "100000000"}) {
    CliResult r =
        run_fivefold("eval --ckpt " + run + " --data " + tiny_data_dir() + "/val-00000.bin --batch " + batch);
    expect_failure(r, {(std::string("--batch is ") + batch).c_str(), "between 1 and 4096"});
  }
  CliResult r = run_fivefold(tiny_train(temp_dir("bare"), "--dim"));
  expect_failure(r, {"--dim needs a value"});
  r = run_fivefold("eval --ckpt " + run + " --data " + tiny_data_dir() + "/val-00000.bin --max-windows");
  expect_failure(r, {"--max-windows needs a value"});
  r = run_fivefold("eval --data " + tiny_data_dir() + "/val-00000.bin --ckpt");
  expect_failure(r, {"--ckpt needs a value"});
  r = run_fivefold("eval --ckpt " + run + " --data " + tiny_data_dir() + "/val-00000.bin --threads 100000");
  expect_failure(r, {"--threads is 100000", "at most 4 per core"});
  r = run_fivefold(tiny_train(temp_dir("eps"), "--adam-eps 0"));
  expect_failure(r, {"adam_eps must be a positive number"});
}

TEST(BadInput, OutThatIsAFileOrCannotBeCreated) {
  const std::string dir = temp_dir("outfile");
  std::ofstream(dir + "/a_file") << "x";
  CliResult r = run_fivefold(tiny_train(dir + "/a_file"));
  expect_failure(r, {"--out", "a_file", "is a file, not a folder"});
  EXPECT_EQ(r.output.find("filesystem error"), std::string::npos) << r.output;
  r = run_fivefold(tiny_train(dir + "/a_file/below"));
  expect_failure(r, {"--out", "cannot be created", "writable location"});
  r = run_fivefold("prepare --one-doc-per-line --text " + dir + "/a_file --vocab 300 --out " + dir + "/a_file");
  expect_failure(r, {"is a file, not a folder"});
}
