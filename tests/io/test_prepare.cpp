#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/checksum.h"
#include "io/prepare.h"
#include "io/token_shard.h"
#include "io/sentencepiece_tokenizer.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;

namespace {

std::vector<std::string> verse_lines(int n) {
  static const char* text[] = {"In the beginning God created the heaven and the earth.",
                               "And the earth was without form, and void.",
                               "And God said, Let there be light: and there was light.",
                               "And God saw the light, that it was good."};
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    lines.push_back("Ge" + std::to_string(i / 31 + 1) + ":" + std::to_string(i % 31 + 1) + " " +
                    text[i % 4]);
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines, size_t begin, size_t end) {
  std::string s;
  for (size_t i = begin; i < end; ++i) s += lines[i] + "\n";
  return s;
}

}  // namespace

TEST(Prepare, ShardsMetaAndTokenizerAgree) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(300);
  ff::testing::write_all(dir.file("text.txt"), join(lines, 0, lines.size()));
  const std::string out = dir.file("data");
  PrepareResult r = prepare_corpus(dir.file("text.txt"), 320, out, 0.1);

  EXPECT_EQ(r.train_lines, 270u);
  EXPECT_EQ(r.val_lines, 30u);
  EXPECT_EQ(r.vocab_size, 320);
  EXPECT_EQ(r.tokenizer_path, out + "/tokenizer.model");

  const auto train = read_token_shard(out + "/train.bin");
  const auto val = read_token_shard(out + "/val.bin");
  EXPECT_EQ(train.size(), r.train_tokens);
  EXPECT_EQ(val.size(), r.val_tokens);

  SentencePieceTokenizer tok(out + "/tokenizer.model");
  EXPECT_EQ(r.newline_id, tok.newline_id());
  // Layout: every line is BOS, its tokens, newline.
  EXPECT_EQ(train.front(), tok.bos_id());
  EXPECT_EQ(val.front(), tok.bos_id());
  EXPECT_EQ(train.back(), tok.newline_id());
  EXPECT_EQ(std::count(train.begin(), train.end(), tok.newline_id()), 270);
  EXPECT_EQ(std::count(train.begin(), train.end(), tok.bos_id()), 270);
  EXPECT_EQ(std::count(val.begin(), val.end(), tok.newline_id()), 30);
  EXPECT_EQ(std::count(val.begin(), val.end(), tok.bos_id()), 30);
  for (size_t i = 0; i + 1 < train.size(); ++i) {
    if (train[i] == tok.newline_id()) {
      ASSERT_EQ(train[i + 1], tok.bos_id()) << i;
    }
  }
  std::vector<int32_t> first_line = {tok.bos_id()};
  for (int32_t id : tok.encode(lines[0])) first_line.push_back(id);
  first_line.push_back(tok.newline_id());
  EXPECT_TRUE(std::equal(first_line.begin(), first_line.end(), train.begin()));
  EXPECT_EQ(tok.decode(train), join(lines, 0, 270));
  EXPECT_EQ(tok.decode(val), join(lines, 270, 300));

  std::ifstream in(out + "/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["vocab_size"], 320);
  EXPECT_EQ(meta["train_tokens"], r.train_tokens);
  EXPECT_EQ(meta["val_tokens"], r.val_tokens);
  EXPECT_EQ(meta["bos_id"], 1);
  EXPECT_EQ(meta["eos_id"], 2);
  EXPECT_EQ(meta["newline_id"], 3);
  EXPECT_EQ(meta["train_lines"], 270);
  EXPECT_EQ(meta["source_file"], std::filesystem::absolute(dir.file("text.txt")).string());
  EXPECT_EQ(read_token_shard_info(out + "/train.bin").vocab_size, 320u);
  // Both shards carry the checksum of the tokenizer file's bytes (a replaced tokenizer of the
  // same size is noticed).
  const std::string model_bytes = ff::testing::read_all(out + "/tokenizer.model");
  const uint64_t sum = checksum64(model_bytes.data(), model_bytes.size());
  EXPECT_EQ(tok.checksum(), sum);
  EXPECT_EQ(read_token_shard_info(out + "/train.bin").tokenizer_checksum, sum);
  EXPECT_EQ(read_token_shard_info(out + "/val.bin").tokenizer_checksum, sum);
}

TEST(Prepare, CrlfAndLfGiveTheSameTokens) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(120);
  std::string lf = join(lines, 0, lines.size()), crlf;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  ff::testing::write_all(dir.file("lf.txt"), lf);
  ff::testing::write_all(dir.file("crlf.txt"), crlf);
  prepare_corpus(dir.file("lf.txt"), 300, dir.file("a"), 0.05);
  prepare_corpus(dir.file("crlf.txt"), 300, dir.file("b"), 0.05);
  EXPECT_EQ(read_token_shard(dir.file("a/val.bin")), read_token_shard(dir.file("b/val.bin")));
}

TEST(Prepare, BadInputsAreExplained) {
  ff::testing::TempDir dir;
  expect_error([&] { prepare_corpus(dir.file("missing.txt"), 300, dir.file("o")); },
               {"missing.txt", "not found"});
  ff::testing::write_all(dir.file("blank.txt"), "\n  \n\n");
  expect_error([&] { prepare_corpus(dir.file("blank.txt"), 300, dir.file("o")); },
               {"blank.txt", "empty"});
  ff::testing::write_all(dir.file("text.txt"), join(verse_lines(100), 0, 100));
  expect_error([&] { prepare_corpus(dir.file("text.txt"), 9000, dir.file("o")); },
               {"vocab size 9000", "too large"});
  expect_error([&] { prepare_corpus(dir.file("text.txt"), 300, dir.file("o"), 1.0); },
               {"val_fraction"});
  ff::testing::write_all(dir.file("one.txt"), "a single line\n");
  expect_error([&] { prepare_corpus(dir.file("one.txt"), 300, dir.file("o")); },
               {"only 1 lines", "validation"});
}

namespace {

// Caps the size of any file this process writes, as a nearly full disk does; writes past it fail
// with EFBIG (SIGXFSZ, which would kill the test, is ignored meanwhile).
class FileSizeCap {
 public:
  explicit FileSizeCap(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit cap = old_;
    cap.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &cap);
  }
  ~FileSizeCap() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace

// A prepare that failed for a full disk used to leave a new tokenizer without shards (or beside the
// old ones). Now the folder keeps exactly what it held before.
TEST(Prepare, FailingMidwayLeavesTheFolderAsItWas) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(400);
  ff::testing::write_all(dir.file("a.txt"), join(lines, 0, 200));
  ff::testing::write_all(dir.file("b.txt"), join(lines, 200, 400));
  const std::string out = dir.file("data");
  prepare_corpus(dir.file("a.txt"), 320, out, 0.1);
  std::map<std::string, std::string> before;
  for (const char* f : {"tokenizer.model", "tokenizer.vocab", "train.bin", "val.bin", "meta.json"})
    before[f] = ff::testing::read_all(out + "/" + f);
  // Room for the tokenizer files but not for train.bin: the failure comes after the tokenizer.
  const size_t cap = std::max(before["tokenizer.model"].size(), before["tokenizer.vocab"].size()) + 64;
  ASSERT_LT(cap, before["train.bin"].size());
  {
    FileSizeCap full(cap);
    expect_error([&] { prepare_corpus(dir.file("b.txt"), 320, out, 0.1); }, {"train.bin", "left as it was"});
  }
  for (const auto& [f, bytes] : before) EXPECT_EQ(ff::testing::read_all(out + "/" + f), bytes) << f;
  EXPECT_FALSE(std::filesystem::exists(out + "/.prepare-partial"));

  // A fresh folder gets nothing at all.
  const std::string fresh = dir.file("fresh");
  {
    FileSizeCap full(cap);
    expect_error([&] { prepare_corpus(dir.file("b.txt"), 320, fresh, 0.1); }, {"train.bin"});
  }
  EXPECT_TRUE(std::filesystem::is_empty(fresh));
  // And the next prepare simply works.
  prepare_corpus(dir.file("b.txt"), 320, out, 0.1);
  EXPECT_NE(ff::testing::read_all(out + "/train.bin"), before["train.bin"]);
}
