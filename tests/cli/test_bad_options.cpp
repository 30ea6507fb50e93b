// Command-line options checked against each command's table before any work: out of range, NaN,
// missing, repeated, or too large to draw. Each message names the option, the value and the range.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bad_input_fixtures.h"

using namespace ff::testkit;

TEST(BadOptions, SampleRefusesValuesOutsideTheirRange) {
  const std::string run = good_run();
  const std::string sample = "sample --ckpt " + run + " --prompt And ";
  expect_failure(run_fivefold(sample + "--max-tokens -5"), {"--max-tokens is -5", "between 1 and"});
  expect_failure(run_fivefold(sample + "--temperature -1"), {"--temperature is -1", "between 0 and 100"});
  expect_failure(run_fivefold(sample + "--temperature nan"), {"--temperature is nan", "between 0 and 100"});
  expect_failure(run_fivefold(sample + "--top-k -1"), {"--top-k is -1", "between 0 and", "whole vocabulary"});
  expect_failure(run_fivefold(sample + "--seed -1"), {"--seed is -1", "between 0 and"});
  expect_failure(run_fivefold("sample --ckpt " + run + " --max-tokens 5"), {"missing --prompt", "usage:"});
}

TEST(BadOptions, EvalAndVerifyRefuseNegativeCounts) {
  const std::string run = good_run();
  expect_failure(run_fivefold("eval --ckpt " + run + " --data " + tiny_data_dir() + "/val-00000.bin --max-windows -1"),
                 {"--max-windows is -1", "between 0 and", "whole shard"});
  expect_failure(run_fivefold("verify --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                              " --layout dp=1 --tolerance -1"),
                 {"--tolerance is -1", "between 0 and 1"});
}

TEST(BadOptions, AnOptionGivenTwiceIsRefused) {
  expect_failure(run_fivefold(tiny_train(temp_dir("twice"), "--steps 3 --steps 4")),
                 {"--steps is given twice", "'3' and '4'"});
  // The two spellings of a config key are one option.
  expect_failure(run_fivefold(tiny_train(temp_dir("twice"), "--eval_every 2")), {"--eval-every is given twice"});
  expect_failure(run_fivefold("schedule --pp 2 --pp 4 --schedule 1f1b"), {"--pp is given twice"});
}

TEST(BadOptions, ScheduleTooLargeToDrawIsRefusedBeforeItIsBuilt) {
  expect_failure(run_fivefold("schedule --pp 100000 --microbatches 100000 --schedule 1f1b"),
                 {"--pp is 100000", "between 2 and 1024"});
  const auto t0 = std::chrono::steady_clock::now();
  expect_failure(run_fivefold("schedule --pp 1000 --microbatches 60000 --schedule 1f1b"),
                 {"1000 x 60000 x 1 = 60000000 blocks", "--microbatches 4000"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));  // refused, not drawn
}

// The kernels' choice variables are read before any work: a value that is not a choice ends the
// command naming the variable and its values, and the run folder it was given is never created
// (fp32 included, whose GEMMs would never have asked).
TEST(BadOptions, AKernelChoiceVariableOutsideItsValuesStopsTheCommandFirst) {
  for (const char* precision : {"fp32", "bf16"}) {
    auto refused = [&](const std::string& variable, std::initializer_list<const char*> words) {
      const std::string out = temp_dir("kernel_choice") + "/run";
      const CliResult r =
          run_fivefold_with(variable + "=yes ", tiny_train(out, std::string("--precision ") + precision));
      expect_failure(r, words);
      EXPECT_NE(r.output.find(variable + "=yes"), std::string::npos) << r.output;
      EXPECT_FALSE(std::filesystem::exists(out)) << variable << ", " << precision << ": " << r.output;
    };
    refused("FIVEFOLD_AMX_GEMM", {"on (fivefold's tile GEMM", "the default", "off (oneDNN", "emulate"});
    refused("FIVEFOLD_AMX", {"off (the vector", "emulate"});
    refused("FIVEFOLD_MAX_CPU_ISA", {"avx512_bf16"});
  }
}

// The text appears while it is generated: a sample far too long to finish, stopped after a few
// seconds, has already printed its prompt and a continuation.
TEST(BadOptions, SampleStreamsItsText) {
  const std::string run = good_run();
  const std::string out = temp_dir("stream") + "/out.txt";
  const std::string cmd = "timeout -s TERM 6 " + std::string(FIVEFOLD_BIN) + " sample --ckpt " + run +
                          " --prompt And --temperature 0 --max-tokens 100000000 > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_EQ(WEXITSTATUS(status), 124) << "greedy generation ended before the timeout; output:\n" << read_file(out);
  const std::string text = read_file(out);
  EXPECT_EQ(text.rfind("And", 0), 0u) << text;
  EXPECT_GT(text.size(), 20u) << "only this much was printed in 6 s: '" << text << "'";
}

// The streamed pieces add up to the text SentencePiece itself decodes from the same ids (the
// Python library, independent of fivefold's decoder), byte for byte, at a temperature that
// samples many different tokens (word starts, byte pieces).
TEST(BadOptions, StreamedSampleIsTheDecodedText) {
  const std::string run = good_run();
  const std::string dir = temp_dir("streamed");
  const std::string cmd = std::string(FIVEFOLD_BIN) + " sample --ckpt " + run + " --prompt 'And the' --max-tokens 60 " +
                          "--temperature 1.5 --top-k 0 --seed 7 --ids-out " + dir + "/ids.json > " + dir + "/out.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string decode =
      "/usr/bin/python3 -c \"import json, sentencepiece as s; "
      "sp = s.SentencePieceProcessor(model_file='" + run + "/tokenizer.model'); "
      "j = json.load(open('" + dir + "/ids.json')); "
      "open('" + dir + "/expected.txt', 'wb').write((sp.decode(j['prompt'] + j['continuation']) + '\\n').encode('utf-8', 'surrogateescape'))\"";
  ASSERT_EQ(std::system(decode.c_str()), 0);
  EXPECT_EQ(read_file(dir + "/out.txt"), read_file(dir + "/expected.txt"));
  EXPECT_GT(read_file(dir + "/out.txt").size(), 20u);
}
