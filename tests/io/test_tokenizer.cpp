#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;

namespace {

// A few hundred scripture-like lines from a small vocabulary, deterministic from the seed.
std::string generated_text(int lines) {
  static const char* words[] = {"And",    "the",  "LORD", "said",       "unto",     "Moses",
                                "behold", "land", "of",   "Egypt",      "children", "Israel",
                                "went",   "out",  "into", "wilderness", "shall",    "come",
                                "to",     "pass", "that", "his"};
  RngState rng{2024, 0};
  std::ostringstream out;
  for (int i = 0; i < lines; ++i) {
    out << "Ex" << (i / 20 + 1) << ':' << (i % 20 + 1);
    const int n = 6 + int(rng.next_below(10));
    for (int w = 0; w < n; ++w) out << ' ' << words[rng.next_below(std::size(words))];
    out << (i % 3 == 0 ? ";" : ".") << '\n';
  }
  return out.str();
}

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    text_ = generated_text(400);
    ff::testing::write_all(dir_.file("text.txt"), text_);
    SentencePieceTokenizer::train(dir_.file("text.txt"), 400, dir_.file("tok"));
  }
  ff::testing::TempDir dir_;
  std::string text_;
};

}  // namespace

TEST_F(TokenizerTest, SpecialIdsAndVocab) {
  SentencePieceTokenizer tok(dir_.file("tok.model"));
  EXPECT_EQ(tok.vocab_size(), 400);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.newline_id(), 3);
  EXPECT_EQ(tok.decode({tok.newline_id()}), "\n");
  EXPECT_EQ(tok.decode({tok.bos_id(), tok.eos_id()}), "");
}

TEST_F(TokenizerTest, TrainingTextRoundTripsAndCompresses) {
  SentencePieceTokenizer tok(dir_.file("tok.model"));
  std::istringstream lines(text_);
  size_t bytes = 0, ids = 0;
  for (std::string line; std::getline(lines, line);) {
    auto enc = tok.encode(line);
    ASSERT_EQ(tok.decode(enc), line);
    bytes += line.size();
    ids += enc.size();
    for (int32_t id : enc) ASSERT_TRUE(id >= 0 && id < 400);
  }
  // ~100 merges cover a 22-word vocabulary: at least 3 bytes per token.
  EXPECT_LT(ids * 3, bytes);
  // Frequent words become single pieces.
  EXPECT_EQ(tok.encode(" the").size(), 1u);
}

TEST_F(TokenizerTest, AnyTextRoundTripsThroughByteFallback) {
  SentencePieceTokenizer tok(dir_.file("tok.model"));
  const std::vector<std::string> samples = {
      "",
      "  leading and double  spaces, trailing ",
      "tabs\tand\r\ncarriage returns",
      "Ünïcödé, 中文, emoji 🙂 and 0123456789",
      "two\nlines\n",
  };
  for (const auto& s : samples) EXPECT_EQ(tok.decode(tok.encode(s)), s);
  auto enc = tok.encode("said\nunto");
  EXPECT_EQ(std::count(enc.begin(), enc.end(), tok.newline_id()), 1);
  // Unseen characters never map to <unk> (id 0); they become byte pieces.
  auto cjk = tok.encode("中");
  EXPECT_EQ(cjk.size(), 3u);  // three UTF-8 bytes
  EXPECT_EQ(std::count(cjk.begin(), cjk.end(), 0), 0);
}

TEST_F(TokenizerTest, TrainingIsDeterministicAndCrlfBlind) {
  std::string crlf;
  for (char c : text_) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  ff::testing::write_all(dir_.file("crlf.txt"), crlf);
  SentencePieceTokenizer::train(dir_.file("text.txt"), 400, dir_.file("again"));
  SentencePieceTokenizer::train(dir_.file("crlf.txt"), 400, dir_.file("crlf"));
  SentencePieceTokenizer a(dir_.file("tok.model")), b(dir_.file("again.model")), c(dir_.file("crlf.model"));
  // Same pieces in the same order (the model files differ only in the recorded prefix).
  for (int id = 0; id < 400; ++id) {
    ASSERT_EQ(a.decode({id}), b.decode({id})) << id;
    ASSERT_EQ(a.decode({id}), c.decode({id})) << id;
  }
  EXPECT_EQ(a.encode(text_), b.encode(text_));
}

TEST_F(TokenizerTest, VocabSizeOutOfRangeIsExplained) {
  expect_error([&] { SentencePieceTokenizer::train(dir_.file("text.txt"), 200, dir_.file("x")); },
               {"vocab size 200", "too small"});
  expect_error([&] { SentencePieceTokenizer::train(dir_.file("text.txt"), 265, dir_.file("x")); },
               {"vocab size 265", "too small", "needs at least"});
  expect_error([&] { SentencePieceTokenizer::train(dir_.file("text.txt"), 5000, dir_.file("x")); },
               {"vocab size 5000", "too large", "at most"});
}

TEST(SentencePieceTokenizer, MissingOrBadFilesAreExplained) {
  ff::testing::TempDir dir;
  expect_error([&] { SentencePieceTokenizer t(dir.file("none.model")); },
               {"none.model", "not found", "fivefold prepare"});
  ff::testing::write_all(dir.file("junk.model"), "this is not a protobuf");
  expect_error([&] { SentencePieceTokenizer t(dir.file("junk.model")); }, {"cannot be loaded"});
  expect_error([&] { SentencePieceTokenizer::train(dir.file("none.txt"), 300, dir.file("m")); },
               {"none.txt", "not found"});
  ff::testing::write_all(dir.file("empty.txt"), "");
  expect_error([&] { SentencePieceTokenizer::train(dir.file("empty.txt"), 300, dir.file("m")); },
               {"empty.txt", "empty"});
}
