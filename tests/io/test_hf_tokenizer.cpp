// tokenizer.json reading, with expected ids worked out by hand from the tiny vocabularies and
// merges in tests/support/tiny_hf_tokenizers.h (the working is in each test's comments). The
// whole-corpus comparison with Hugging Face's own implementation lives with the oracle tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/tiny_hf_tokenizers.h"
#include "io/tokenizer/hf_tokenizer.h"
#include "io/tokenizer/tokenizer.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;
using Ids = std::vector<int32_t>;

namespace {

class HfTokenizerTest : public ::testing::Test {
 protected:
  std::unique_ptr<TextTokenizer> open(const nlohmann::json& j, const std::string& name = "tokenizer.json") {
    ff::testing::write_all(dir_.file(name), j.dump());
    return open_tokenizer(dir_.file(name));
  }
  ff::testing::TempDir dir_;
};

// Byte-level ids: h0 e1 l2 o3 Ġ4 w5 r6 d7 ll8 he9 llo10 Ġw11 or12 hello13 '14 S15 H16 E17 'S18
// 1:19 2:20 3:21 4:22 5:23 34:24 12:25 123:26 45:27 Ġworld28 Ċ29, <|endoftext|> 30.
// Merge ranks: l+l 0, h+e 1, ll+o 2, Ġ+w 3, o+r 4, he+llo 5, '+S 6, 3+4 7, 1+2 8, 12+3 9, 4+5 10.

TEST_F(HfTokenizerTest, ByteLevelMergesApplyInRankOrder) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json());
  EXPECT_EQ(tok->kind(), TokenizerKind::hf_byte_level_bpe);
  // hello: h e l l o -> l+l (0): h e ll o -> h+e (1): he ll o -> ll+o (2): he llo -> (5): hello.
  EXPECT_EQ(tok->encode("hello"), Ids({13}));
  // lll: l+l at positions 0 and 1 have one rank; the leftmost merges: ll l.
  EXPECT_EQ(tok->encode("lll"), Ids({8, 2}));
  // 12345 is one GPT-2 pre-token (\p{N}+): 3+4 (7) first: 1 2 34 5 -> 1+2 (8): 12 34 5; no more.
  EXPECT_EQ(tok->encode("12345"), Ids({25, 24, 23}));
  // " world" -> Ġ w o r l d -> Ġ+w (3): Ġw o r l d -> o+r (4): Ġw or l d.
  EXPECT_EQ(tok->encode(" world"), Ids({11, 12, 2, 7}));
}

TEST_F(HfTokenizerTest, Gpt2PatternLookAheadAndContractions) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json());
  // "hello  world": \s+(?!\S) takes the first space alone, the second opens " world".
  EXPECT_EQ(tok->encode("hello  world"), Ids({13, 4, 11, 12, 2, 7}));
  // GPT-2's contractions are lower case only: "HE'S" splits HE | ' | S, so '+S never meets.
  EXPECT_EQ(tok->encode("HE'S"), Ids({16, 17, 14, 15}));
  // A character outside the vocabulary (z), with neither byte fallback nor unk, is dropped,
  // as Hugging Face's BPE drops it.
  EXPECT_EQ(tok->encode("hz"), Ids({0}));
  EXPECT_EQ(tok->newline_id(), 29);
}

TEST_F(HfTokenizerTest, Llama3SplitPatternThroughSequence) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", ff::testing::llama3_split_pattern()}}},
                           {"behavior", "Isolated"}, {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  auto tok = open(j);
  // \p{N}{1,3}: 123 | 45 -> 1 2 3 -> 1+2: 12 3 -> 12+3: 123; 4 5 -> 45.
  EXPECT_EQ(tok->encode("12345"), Ids({26, 27}));
  // (?i:'s) takes "'S" whole, and '+S (6) merges it.
  EXPECT_EQ(tok->encode("HE'S"), Ids({16, 17, 18}));
}

TEST_F(HfTokenizerTest, DigitsSplitEachDigitBeforeByteLevel) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Digits"}, {"individual_digits", true}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}}}};
  auto tok = open(j);
  // Every digit is its own word, so no digit merge applies: 1 2 3 4 5.
  EXPECT_EQ(tok->encode("12345"), Ids({19, 20, 21, 22, 23}));
}

TEST_F(HfTokenizerTest, NfcComposesBeforeTheBytesAreMapped) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  // U+00E9 is C3 A9 in UTF-8, which the byte-level alphabet writes as "Ã" and "©".
  j["model"]["vocab"]["Ã"] = 31;
  j["model"]["vocab"]["©"] = 32;
  j["added_tokens"][0]["normalized"] = false;
  j["normalizer"] = {{"type", "NFC"}};
  auto tok = open(j);
  EXPECT_EQ(tok->encode("\u00e9"), Ids({31, 32}));
  EXPECT_EQ(tok->encode("e\u0301"), Ids({31, 32}));  // e + combining acute composes to U+00E9
}

TEST_F(HfTokenizerTest, SplitOnAStringPatternIsLiteral) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"String", "l."}}}, {"behavior", "Isolated"}, {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  auto tok = open(j);
  // "l." is text, not "l then any character": "hello" has no "l." so stays whole (hello);
  // "hel.lo" splits into "he", "l.", "lo": he | l . | l o ("." is not in the vocabulary).
  EXPECT_EQ(tok->encode("hello"), Ids({13}));
  EXPECT_EQ(tok->encode("hel.lo"), Ids({9, 2, 2, 3}));
}

TEST_F(HfTokenizerTest, IgnoreMergesEmitsWholeWords) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  auto merged = open(j);
  EXPECT_EQ(merged->encode(" world"), Ids({11, 12, 2, 7}));  // merges cannot reach Ġworld
  j["model"]["ignore_merges"] = true;
  auto whole = open(j, "whole.json");
  EXPECT_EQ(whole->encode(" world"), Ids({28}));  // Ġworld is in the vocabulary as it is
  EXPECT_EQ(whole->encode(" worl"), Ids({11, 12, 2}));  // not in it: merges as before
}

TEST_F(HfTokenizerTest, AddedTokenInTheMiddleOfText) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json());
  const Ids ids = tok->encode("hello<|endoftext|> world");
  EXPECT_EQ(ids, Ids({13, 30, 11, 12, 2, 7}));
  EXPECT_EQ(tok->decode(ids), "hello<|endoftext|> world");
  EXPECT_EQ(tok->eos_id(), 30);  // the post-processor adds nothing; the end-of-text token
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_TRUE(tok->document_prefix().empty());
  EXPECT_EQ(tok->vocab_size(), 31);
}

TEST_F(HfTokenizerTest, AddPrefixSpaceAndStrippingAddedTokens) {
  nlohmann::json j = ff::testing::tiny_byte_level_tokenizer_json();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  j["added_tokens"][0]["rstrip"] = true;
  auto tok = open(j);
  // "hello" -> " hello" -> Ġ h e l l o -> Ġ hello. After the added token (rstrip took the space)
  // "hello" again gets its prefix space.
  EXPECT_EQ(tok->encode("hello"), Ids({4, 13}));
  EXPECT_EQ(tok->encode("hello<|endoftext|> hello"), Ids({4, 13, 30, 4, 13}));
}

// SentencePiece-style ids: <unk>0 <s>1 </s>2 <0xXX> 3+XX ▁259 h260 i261 ▁h262 ▁hi263;
// merges ▁+h (0), ▁h+i (1).

TEST_F(HfTokenizerTest, ByteFallbackOfAnEmojiRoundTrips) {
  auto tok = open(ff::testing::tiny_sentencepiece_tokenizer_json());
  EXPECT_EQ(tok->kind(), TokenizerKind::hf_sentencepiece_bpe);
  // "hi 😀" -> "▁hi▁😀"; 😀 is F0 9F 98 80 -> <0xF0> 243, <0x9F> 162, <0x98> 155, <0x80> 131.
  const Ids ids = tok->encode("hi 😀");
  EXPECT_EQ(ids, Ids({263, 259, 243, 162, 155, 131}));
  EXPECT_EQ(tok->decode(ids), "hi 😀");
  EXPECT_EQ(tok->document_prefix(), Ids({1}));
  EXPECT_TRUE(tok->document_suffix().empty());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->newline_id(), 3 + 0x0A);
  // Each piece between special tokens is normalized alone, so each gets its own ▁.
  EXPECT_EQ(tok->encode("hi</s>hi"), Ids({263, 2, 263}));
  // Bytes that are not UTF-8 decode to U+FFFD, one per byte.
  EXPECT_EQ(tok->decode({260, 3 + 0xF0, 3 + 0x9F}), "h\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(HfTokenizerTest, UnknownCharactersWithoutByteFallback) {
  nlohmann::json j = ff::testing::tiny_sentencepiece_tokenizer_json();
  j["model"]["byte_fallback"] = false;
  auto fused = open(j);
  // "hé€" -> ▁ h é € -> ▁ h <unk> (é and € fused) -> ▁h <unk>.
  EXPECT_EQ(fused->encode("hé€"), Ids({262, 0}));
  j["model"]["fuse_unk"] = false;
  auto apart = open(j, "apart.json");
  EXPECT_EQ(apart->encode("hé€"), Ids({262, 0, 0}));
}

TEST_F(HfTokenizerTest, MetaspacePrependsOnlyAtTheStartOfTheText) {
  nlohmann::json j = ff::testing::tiny_sentencepiece_tokenizer_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", false}};
  auto tok = open(j);
  // "hi hi" -> "▁hi▁hi", one word: ▁+h at 0 and 3 (rank 0) first, then ▁h+i twice.
  EXPECT_EQ(tok->encode("hi hi"), Ids({263, 263}));
  // After <s> the text does not start the input, so "first" adds no ▁: h i.
  EXPECT_EQ(tok->encode("<s>hi"), Ids({1, 260, 261}));
}

TEST_F(HfTokenizerTest, RefusesWhatItDoesNotImplementByName) {
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit, std::initializer_list<std::string> words,
                           bool sentencepiece = false) {
    nlohmann::json j = sentencepiece ? ff::testing::tiny_sentencepiece_tokenizer_json()
                                     : ff::testing::tiny_byte_level_tokenizer_json();
    edit(j);
    ff::testing::write_all(dir_.file("bad.json"), j.dump());
    expect_error([&] { open_tokenizer(dir_.file("bad.json")); }, words);
  };
  refused([](auto& j) { j["model"]["type"] = "WordPiece"; }, {"bad.json", "model.type", "\"WordPiece\"", "BPE"});
  refused([](auto& j) { j["model"]["type"] = "Unigram"; }, {"model.type", "\"Unigram\""});
  refused([](auto& j) { j["model"]["dropout"] = 0.1; }, {"model.dropout", "0.1"});
  refused([](auto& j) { j["normalizer"] = {{"type", "Lowercase"}}; }, {"normalizer.type", "\"Lowercase\"", "NFC"});
  refused([](auto& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, {"pre_tokenizer.type", "\"Whitespace\""});
  refused(
      [](auto& j) {
        j["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "\\s"}}}, {"behavior", "Removed"}, {"invert", false}}}}};
      },
      {"pre_tokenizer.pretokenizers[0].behavior", "\"Removed\"", "Isolated"});
  refused(
      [](auto& j) {
        j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}, {"invert", false}};
      },
      {"pre_tokenizer", "(unclosed", "does not compile"});
  refused([](auto& j) { j["decoder"] = {{"type", "WordPiece"}}; }, {"decoder.type", "\"WordPiece\""});
  refused([](auto& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; },
          {"post_processor.type", "\"RobertaProcessing\"", "TemplateProcessing"});
  refused([](auto& j) { j["model"]["merges"][2] = "ll z"; }, {"model.merges[2]", "\"z\" is not"});
  refused([](auto& j) { j["added_tokens"][0]["single_word"] = true; }, {"added_tokens[0].single_word"});
  refused([](auto& j) { j["truncation"] = {{"max_length", 8}}; }, {"truncation", "max_length"});
  refused([](auto& j) { j["added_tokens"][0]["normalized"] = true; },
          {"added_tokens[0].normalized", "normalizer"}, /*sentencepiece=*/true);
  ff::testing::write_all(dir_.file("broken.json"), "{\"model\": ");
  expect_error([&] { open_tokenizer(dir_.file("broken.json")); }, {"broken.json", "not valid JSON"});
}

TEST_F(HfTokenizerTest, InvalidUtf8TextIsRefused) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json());
  expect_error([&] { tok->encode("he\xffllo"); }, {"not valid UTF-8", "byte 2"});
}

TEST_F(HfTokenizerTest, TokenizerFileInAFolder) {
  expect_error([&] { tokenizer_file_in(dir_.path().string()); }, {dir_.path().string(), "no tokenizer", "prepare"});
  ff::testing::write_all(dir_.file("tokenizer.json"), ff::testing::tiny_byte_level_tokenizer_json().dump());
  EXPECT_EQ(tokenizer_file_in(dir_.path().string()), dir_.file("tokenizer.json"));
  ff::testing::write_all(dir_.file("tokenizer.model"), "x");
  expect_error([&] { tokenizer_file_in(dir_.path().string()); }, {"both tokenizer.json and tokenizer.model"});
}

TEST_F(HfTokenizerTest, OpenedByContentWhateverItsName) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json(), "renamed.tok");
  EXPECT_EQ(tok->kind(), TokenizerKind::hf_byte_level_bpe);
  EXPECT_EQ(tok->encode("hello"), Ids({13}));
}

TEST_F(HfTokenizerTest, EncodeIsThreadSafe) {
  auto tok = open(ff::testing::tiny_byte_level_tokenizer_json());
  const std::string text = "hello  world<|endoftext|>HE'S 12345\n";
  const Ids want = tok->encode(text);
  std::vector<Ids> got(64);
#pragma omp parallel for
  for (int i = 0; i < 64; ++i) got[size_t(i)] = tok->encode(text);
  for (const Ids& g : got) EXPECT_EQ(g, want);
}

}  // namespace
