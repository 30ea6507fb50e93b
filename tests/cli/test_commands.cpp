// The happy path a user walks: prepare, train, eval, sample, export.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

TEST(Commands, PrepareTrainEvalSampleExport) {
  std::string dir = temp_dir("walk");
  write_corpus_text(dir + "/text.txt", 2000, 21);
  CliResult r = run_fivefold("prepare --one-doc-per-line --text " + dir + "/text.txt --vocab 320 --out " + dir + "/data");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + dir + "/data --out " + dir +
                   "/run --steps 30 --eval-every 10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step    30/30"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MFU"), std::string::npos);
  EXPECT_NE(r.output.find("activations"), std::string::npos);  // the memory table
  // metrics.jsonl: one record per step with the documented fields; val loss falls.
  std::ifstream m(dir + "/run/metrics.jsonl");
  std::vector<nlohmann::json> recs;
  for (std::string line; std::getline(m, line);) recs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(recs.size(), 30u);
  for (const char* k : {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu", "bytes"})
    EXPECT_TRUE(recs.back().contains(k)) << k;
  EXPECT_LT(recs[29]["val_loss"].get<double>(), recs[9]["val_loss"].get<double>());
  EXPECT_TRUE(fs::exists(dir + "/run/config.toml"));

  r = run_fivefold("eval --ckpt " + dir + "/run --data " + dir + "/data/val-00000.bin");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("loss"), std::string::npos);

  r = run_fivefold("sample --ckpt " + dir + "/run --prompt And --max-tokens 20 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("And", 0), 0u) << r.output;
  EXPECT_GT(r.output.size(), 20u);
  EXPECT_EQ(run_fivefold("sample --ckpt " + dir + "/run --prompt And --max-tokens 20 --seed 3").output, r.output)
      << "same seed, same text";

  r = run_fivefold("export --ckpt " + dir + "/run --out " + dir + "/hf");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"model.safetensors", "config.json", "tokenizer.model"})
    EXPECT_TRUE(fs::exists(dir + "/hf/" + f)) << f;
  auto cfg = nlohmann::json::parse(read_file(dir + "/hf/config.json"));
  EXPECT_EQ(cfg["hidden_size"], 64);
  EXPECT_EQ(cfg["num_key_value_heads"], 2);
  EXPECT_EQ(cfg["architectures"][0], "LlamaForCausalLM");
}

// prepare as a user with real corpora runs it: a folder of gzip'd jsonl with a bad line, refused
// by default at file:line, skipped and reported with --on-bad-record skip; the data trains.
TEST(Commands, PrepareReadsAFolderOfCompressedJsonlAndReportsBadRecords) {
  const std::string dir = temp_dir("jsonl");
  write_corpus_text(dir + "/text.txt", 1200, 5);
  fs::create_directories(dir + "/in/part2");
  std::ifstream text(dir + "/text.txt");
  std::ofstream a(dir + "/in/a.jsonl"), b(dir + "/in/part2/b.jsonl");
  int n = 0;
  for (std::string line; std::getline(text, line); ++n) {
    (n < 600 ? a : b) << nlohmann::json({{"text", line}}).dump() << "\n";
    if (n == 700) b << "{\"text\": \"unterminated\n";
  }
  a.close();
  b.close();
  ASSERT_EQ(std::system(("gzip " + dir + "/in/part2/b.jsonl").c_str()), 0);
  CliResult r = run_fivefold("prepare --input " + dir + "/in --vocab 320 --out " + dir + "/data");
  ASSERT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("b.jsonl.gz:102: bad JSON"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--on-bad-record skip"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/data/meta.json"));

  r = run_fivefold("prepare --input " + dir + "/in --vocab 320 --out " + dir + "/data --on-bad-record skip --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped bad record " + dir + "/in/part2/b.jsonl.gz:102: bad JSON"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 bad records skipped"), std::string::npos) << r.output;
  std::ifstream m(dir + "/data/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(m);
  EXPECT_EQ(meta["input_files"], 2);
  EXPECT_EQ(meta["bad_records"], 1);
  EXPECT_EQ(meta["train_documents"].get<int>() + meta["val_documents"].get<int>(), 1200);
  r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + dir + "/data --out " + dir +
                   "/run --steps 3 --eval-every 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// Fine-tuning data end to end: prompt/completion jsonl prepared with the tokenizer of another
// prepare, trained with document masks. Every completion is the same few tokens, so a loss taken
// over the completions alone (the mask at work) falls near zero within 30 steps (0.002 seen), while a
// loss over the prompts' verse text could not; eval counts loss targets, not tokens.
TEST(Commands, PromptCompletionDataTrainsOnTheCompletionOnly) {
  const std::string dir = temp_dir("sft");
  write_corpus_text(dir + "/text.txt", 1500, 9);
  CliResult r = run_fivefold("prepare --one-doc-per-line --text " + dir + "/text.txt --vocab 320 --out " + dir + "/base");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream text(dir + "/text.txt");
  std::ofstream sft(dir + "/sft.jsonl");
  for (std::string line; std::getline(text, line);)
    sft << nlohmann::json({{"prompt", line + "\nQ: amen?\n"}, {"completion", "A: amen."}}).dump() << "\n";
  sft.close();
  r = run_fivefold("prepare --input " + dir + "/sft.jsonl --format prompt-completion --tokenizer " + dir +
                   "/base/tokenizer.model --out " + dir + "/data");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + dir + "/data --out " + dir +
                   "/run --steps 30 --lr 1e-2 --eval-every 0 --doc-mask true");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream m(dir + "/run/metrics.jsonl");
  std::vector<double> losses;
  for (std::string line; std::getline(m, line);) losses.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  ASSERT_EQ(losses.size(), 30u);
  EXPECT_GT(losses.front(), 3.0);
  EXPECT_LT(losses.back(), 0.1) << "the completions are constant: a loss on them alone falls near zero";
  r = run_fivefold("eval --ckpt " + dir + "/run --data " + dir + "/data/val-00000.bin");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("loss targets"), std::string::npos) << r.output;
}
