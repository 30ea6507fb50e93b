// A data folder whose tokenizer is a tokenizer.json: train, eval, sample and export use it, the
// run folder holds that file alone, and `fivefold tokenize` gives the ids worked out by hand in
// tests/io/test_hf_tokenizer.cpp and decodes them back to the text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokens/token_shard.h"
#include "test_data.h"
#include "tiny_hf_tokenizers.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Each line as a document: the tokenizer's prefix, its ids, its suffix.
void write_shards(const std::string& data, const std::string& corpus) {
  const auto tok = ff::open_tokenizer(data + "/tokenizer.json");
  std::vector<int32_t> train, val;
  std::istringstream in(read_file(corpus));
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    auto& out = n % 10 == 9 ? val : train;
    for (const auto& part : {tok->document_prefix(), tok->encode(line), tok->document_suffix()})
      out.insert(out.end(), part.begin(), part.end());
  }
  ff::write_token_shard(data + "/train.bin", train, tok->vocab_size(), tok->checksum());
  ff::write_token_shard(data + "/val.bin", val, tok->vocab_size(), tok->checksum());
}

}  // namespace

TEST(HfTokenizerRun, TrainSampleEvalExportWithTokenizerJson) {
  const std::string dir = temp_dir("hfrun");
  fs::create_directories(dir + "/data");
  write_text(dir + "/data/tokenizer.json", ff::testing::tiny_sentencepiece_tokenizer_json().dump());
  write_corpus_text(dir + "/text.txt", 600, 29);
  write_shards(dir + "/data", dir + "/text.txt");

  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + dir + "/data --out " + dir +
                             "/run --steps 6 --eval-every 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/run/tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir + "/run/tokenizer.model"));

  r = run_fivefold("eval --ckpt " + dir + "/run --data " + dir + "/data/val.bin");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fivefold("sample --ckpt " + dir + "/run --prompt hi --max-tokens 8 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("hi", 0), 0u) << "the prompt comes back without <s> in front: " << r.output;

  r = run_fivefold("export --ckpt " + dir + "/run --out " + dir + "/hf");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/hf/tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir + "/hf/tokenizer.model"));
  const auto cfg = nlohmann::json::parse(read_file(dir + "/hf/config.json"));
  EXPECT_EQ(cfg["bos_token_id"], 1);
  EXPECT_EQ(cfg["eos_token_id"], 2);
  EXPECT_EQ(cfg["vocab_size"], 264);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/hf/tokenizer_config.json"))["tokenizer_class"],
            "PreTrainedTokenizerFast");

  // The exported folder has only tokenizer.json; import takes it along and sample uses it.
  r = run_fivefold("import --hf " + dir + "/hf --out " + dir + "/imported");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(dir + "/imported/tokenizer.json"), read_file(dir + "/data/tokenizer.json"));
  r = run_fivefold("sample --ckpt " + dir + "/imported --prompt hi --max-tokens 4 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

TEST(HfTokenizerRun, TokenizeCommandEncodesLinesAndDecodesThemBack) {
  const std::string dir = temp_dir("hftokenize");
  write_text(dir + "/tokenizer.json", ff::testing::tiny_sentencepiece_tokenizer_json().dump());
  write_text(dir + "/in.txt", "hi 😀\nhi</s>hi\n\nh\r\n");
  CliResult r = run_fivefold("tokenize --tokenizer " + dir + "/tokenizer.json --input " + dir + "/in.txt --ids-out " +
                             dir + "/ids.txt --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tokens/s"), std::string::npos) << r.output;
  // By hand (tests/io/test_hf_tokenizer.cpp): ▁hi ▁ <0xF0> <0x9F> <0x98> <0x80>; ▁hi </s> ▁hi;
  // an empty line has no ids; "h\r" is ▁h <0x0D>.
  EXPECT_EQ(read_file(dir + "/ids.txt"), "263 259 243 162 155 131\n263 2 263\n\n262 16\n");
  r = run_fivefold("tokenize --decode --tokenizer " + dir + "/tokenizer.json --input " + dir + "/ids.txt --text-out " +
                   dir + "/back.txt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Text round-trips, except that the piece after a special token keeps the ▁ its normalizer
  // prepended, as Hugging Face's decoder leaves it (only the text's first space is stripped).
  EXPECT_EQ(read_file(dir + "/back.txt"), "hi 😀\nhi</s> hi\n\nh\r\n");

  write_text(dir + "/bad.txt", "263 x7\n");
  r = run_fivefold("tokenize --decode --tokenizer " + dir + "/tokenizer.json --input " + dir + "/bad.txt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad.txt:1: 'x7' is not a token id"), std::string::npos) << r.output;
}
