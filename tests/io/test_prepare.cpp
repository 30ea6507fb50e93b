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
#include "io/tokens/data_folder.h"
#include "io/corpus/prepare.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_shard_reader.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"
#include "../support/tiny_hf_tokenizers.h"
#include "io/tokenizer/tokenizer.h"
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

namespace {

// Every document framed as BOS, its tokens, EOS; validation every 10th document for 0.1.
std::vector<int32_t> expected_split(const SentencePieceTokenizer& tok, const std::vector<std::string>& docs, bool val,
                                    size_t every) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (((i + 1) % every == 0) != val) continue;
    out.push_back(tok.bos_id());
    for (int32_t id : tok.encode(docs[i])) out.push_back(id);
    out.push_back(tok.eos_id());
  }
  return out;
}

}  // namespace

TEST(Prepare, ShardsMetaAndTokenizerAgree) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(300);
  ff::testing::write_all(dir.file("text.txt"), join(lines, 0, lines.size()));
  const std::string out = dir.file("data");
  PrepareResult r = prepare_corpus(dir.file("text.txt"), 320, out, 0.1);

  EXPECT_EQ(r.train_documents, 270u);
  EXPECT_EQ(r.val_documents, 30u);
  EXPECT_EQ(r.vocab_size, 320);
  EXPECT_EQ(r.tokenizer_path, out + "/tokenizer.model");
  ASSERT_EQ(r.train_paths, std::vector<std::string>{out + "/train-00000.bin"});
  ASSERT_EQ(r.val_paths, std::vector<std::string>{out + "/val-00000.bin"});

  const auto train = read_token_shard(out + "/train-00000.bin");
  const auto val = read_token_shard(out + "/val-00000.bin");
  EXPECT_EQ(train.size(), r.train_tokens);
  EXPECT_EQ(val.size(), r.val_tokens);

  SentencePieceTokenizer tok(out + "/tokenizer.model");
  EXPECT_EQ(train, expected_split(tok, lines, false, 10));
  EXPECT_EQ(val, expected_split(tok, lines, true, 10));
  EXPECT_EQ(std::count(train.begin(), train.end(), tok.eos_id()), 270);
  EXPECT_EQ(std::count(val.begin(), val.end(), tok.bos_id()), 30);

  std::ifstream in(out + "/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["vocab_size"], 320);
  EXPECT_EQ(meta["train_tokens"], r.train_tokens);
  EXPECT_EQ(meta["val_tokens"], r.val_tokens);
  EXPECT_EQ(meta["bos_id"], 1);
  EXPECT_EQ(meta["eos_id"], 2);
  EXPECT_EQ(meta["train_documents"], 270);
  EXPECT_EQ(meta["train_shards"], nlohmann::json::array({"train-00000.bin"}));
  EXPECT_EQ(meta["val_shards"], nlohmann::json::array({"val-00000.bin"}));
  EXPECT_EQ(meta["inputs"][0], std::filesystem::absolute(dir.file("text.txt")).string());
  EXPECT_EQ(meta["tokenizer_source"].get<std::string>().rfind("trained on every document", 0), 0u);
  EXPECT_EQ(read_token_shard_info(out + "/train-00000.bin").vocab_size, 320u);
  // Both shards carry the checksum of the tokenizer file's bytes (a replaced tokenizer of the
  // same size is noticed).
  const std::string model_bytes = ff::testing::read_all(out + "/tokenizer.model");
  const uint64_t sum = checksum64(model_bytes.data(), model_bytes.size());
  EXPECT_EQ(tok.checksum(), sum);
  EXPECT_EQ(read_token_shard_info(out + "/train-00000.bin").tokenizer_checksum, sum);
  EXPECT_EQ(read_token_shard_info(out + "/val-00000.bin").tokenizer_checksum, sum);
  const DataFolderShards listed = data_folder_shards(out);
  EXPECT_EQ(listed.train, r.train_paths);
  EXPECT_EQ(listed.val, r.val_paths);
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
  EXPECT_EQ(read_token_shard(dir.file("a/val-00000.bin")), read_token_shard(dir.file("b/val-00000.bin")));
  EXPECT_EQ(read_token_shard(dir.file("a/train-00000.bin")), read_token_shard(dir.file("b/train-00000.bin")));
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
  // Too few documents to split shows only once they are counted, after encoding: a tokenizer
  // is reused so that training one on a single line does not fail first.
  const PrepareResult some = prepare_corpus(dir.file("text.txt"), 300, dir.file("some"));
  ff::testing::write_all(dir.file("one.txt"), "a single line\n");
  PrepareOptions one;
  one.inputs = {dir.file("one.txt")};
  one.out_dir = dir.file("o");
  one.tokenizer = some.tokenizer_path;
  expect_error([&] { prepare_corpus(one); }, {"only 1 document", "validation", "--val-fraction 0"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("o/meta.json")));
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
  for (const char* f : {"tokenizer.model", "tokenizer.vocab", "train-00000.bin", "val-00000.bin", "meta.json"})
    before[f] = ff::testing::read_all(out + "/" + f);
  // Room for the tokenizer files but not for train.bin: the failure comes after the tokenizer.
  const size_t cap = std::max(before["tokenizer.model"].size(), before["tokenizer.vocab"].size()) + 64;
  ASSERT_LT(cap, before["train-00000.bin"].size());
  {
    FileSizeCap full(cap);
    expect_error([&] { prepare_corpus(dir.file("b.txt"), 320, out, 0.1); }, {"train-00000.bin", "left as it was"});
  }
  for (const auto& [f, bytes] : before) EXPECT_EQ(ff::testing::read_all(out + "/" + f), bytes) << f;
  EXPECT_FALSE(std::filesystem::exists(out + "/.prepare-partial"));

  // A fresh folder gets nothing at all.
  const std::string fresh = dir.file("fresh");
  {
    FileSizeCap full(cap);
    expect_error([&] { prepare_corpus(dir.file("b.txt"), 320, fresh, 0.1); }, {"train-00000.bin"});
  }
  EXPECT_TRUE(std::filesystem::is_empty(fresh));
  // And the next prepare simply works.
  prepare_corpus(dir.file("b.txt"), 320, out, 0.1);
  EXPECT_NE(ff::testing::read_all(out + "/train-00000.bin"), before["train-00000.bin"]);
}

namespace {

std::vector<int32_t> concat_shards(const std::vector<std::string>& paths) {
  std::vector<int32_t> all;
  for (const auto& p : paths) {
    const auto part = read_token_shard(p);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

nlohmann::json read_meta(const std::string& dir) {
  std::ifstream in(dir + "/meta.json");
  return nlohmann::json::parse(in);
}

// n jsonl records, the i-th "record i: " and a verse.
std::vector<std::string> record_texts(int n) {
  std::vector<std::string> texts;
  const auto verses = verse_lines(n);
  for (int i = 0; i < n; ++i) texts.push_back("record " + std::to_string(i) + ":\n" + verses[size_t(i)]);
  return texts;
}

std::string as_jsonl(const std::vector<std::string>& texts) {
  std::string out;
  for (const auto& t : texts) out += nlohmann::json({{"text", t}, {"meta", 1}}).dump() + "\n";
  return out;
}

}  // namespace

// The output depends on the corpus alone: one encoder thread or several, the same bytes; shards
// rotate at shard_tokens without cutting a document, and together hold every document in order.
TEST(Prepare, StreamingOutputIsTheSameForEveryThreadCountAndRotatesShards) {
  ff::testing::TempDir dir;
  const auto texts = record_texts(3000);
  ff::testing::write_all(dir.file("in/a.jsonl"), "");
  std::filesystem::create_directories(dir.file("in/b"));
  ff::testing::write_all(dir.file("in/a.jsonl"), as_jsonl({texts.begin(), texts.begin() + 1000}));
  ff::testing::write_all(dir.file("in/b/c.jsonl"), as_jsonl({texts.begin() + 1000, texts.end()}));
  PrepareOptions o;
  o.inputs = {dir.file("in")};
  o.vocab_size = 400;
  o.val_fraction = 0.1;
  o.shard_tokens = 5000;
  o.threads = 1;
  o.out_dir = dir.file("one");
  const PrepareResult one = prepare_corpus(o);
  // SentencePiece's training is not bit-reproducible run to run; the encoding is the subject.
  o.tokenizer = one.tokenizer_path;
  o.threads = 3;
  o.out_dir = dir.file("three");
  const PrepareResult three = prepare_corpus(o);

  ASSERT_GT(one.train_paths.size(), 3u);
  ASSERT_EQ(one.train_paths.size(), three.train_paths.size());
  for (size_t i = 0; i < one.train_paths.size(); ++i) {
    EXPECT_TRUE(ff::testing::read_all(one.train_paths[i]) == ff::testing::read_all(three.train_paths[i])) << i;
    const auto shard = read_token_shard(one.train_paths[i]);
    EXPECT_LE(shard.size(), 5000u);
    EXPECT_EQ(shard.front(), 1);  // every shard starts a document
    EXPECT_EQ(shard.back(), 2);
  }
  SentencePieceTokenizer tok(one.tokenizer_path);
  EXPECT_EQ(concat_shards(one.train_paths), expected_split(tok, texts, false, 10));
  EXPECT_EQ(concat_shards(one.val_paths), expected_split(tok, texts, true, 10));
  EXPECT_EQ(one.train_documents, 2700u);
  const auto meta = read_meta(dir.file("one"));
  EXPECT_EQ(meta["train_shards"].size(), one.train_paths.size());
  EXPECT_EQ(meta["input_files"], 2);
}

TEST(Prepare, ParagraphsReusedTokenizerAndValidationByCount) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(200);
  ff::testing::write_all(dir.file("lines.txt"), join(lines, 0, lines.size()));
  const PrepareResult first = prepare_corpus(dir.file("lines.txt"), 320, dir.file("first"), 0.1);

  // Paragraphs of three verses; the lines inside a document are joined with "\n".
  std::string text;
  std::vector<std::string> docs;
  for (size_t i = 0; i + 3 <= lines.size(); i += 3) {
    docs.push_back(lines[i] + "\n" + lines[i + 1] + "\n" + lines[i + 2]);
    text += docs.back() + "\r\n\r\n";
  }
  ff::testing::write_all(dir.file("paras.txt"), text);
  PrepareOptions o;
  o.inputs = {dir.file("paras.txt")};
  o.out_dir = dir.file("second");
  o.tokenizer = first.tokenizer_path;
  o.val_docs = 5;
  const PrepareResult r = prepare_corpus(o);
  EXPECT_EQ(ff::testing::read_all(r.tokenizer_path), ff::testing::read_all(first.tokenizer_path));
  EXPECT_EQ(r.val_documents, 5u);
  EXPECT_EQ(r.train_documents, docs.size() - 5);
  SentencePieceTokenizer tok(r.tokenizer_path);
  std::vector<int32_t> val, train;
  for (size_t i = 0; i < docs.size(); ++i) {
    auto& split = i < 5 ? val : train;
    split.push_back(tok.bos_id());
    for (int32_t id : tok.encode(docs[i])) split.push_back(id);
    split.push_back(tok.eos_id());
  }
  EXPECT_EQ(concat_shards(r.val_paths), val);
  EXPECT_EQ(concat_shards(r.train_paths), train);
  EXPECT_NE(std::find(train.begin(), train.end(), tok.newline_id()), train.end());
  const auto meta = read_meta(dir.file("second"));
  EXPECT_EQ(meta["tokenizer_source"], "reused " + std::filesystem::absolute(first.tokenizer_path).string());
  EXPECT_EQ(meta["val_docs"], 5);
  // A reused tokenizer that is not one is refused before any work.
  o.tokenizer = dir.file("paras.txt");
  o.out_dir = dir.file("third");
  EXPECT_THROW(prepare_corpus(o), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("third")));
}

TEST(Prepare, SkippedRecordsAndTheTokenizerSampleAreRecorded) {
  ff::testing::TempDir dir;
  const auto texts = record_texts(400);
  std::string body = as_jsonl(texts);
  body += "{broken\n{\"text\": \"\"}\n{\"title\": \"no text\"}\n";
  ff::testing::write_all(dir.file("d.jsonl"), body);
  PrepareOptions o;
  o.inputs = {dir.file("d.jsonl")};
  o.out_dir = dir.file("out");
  o.vocab_size = 320;
  expect_error([&] { prepare_corpus(o); }, {"d.jsonl:401", "bad JSON", "--on-bad-record skip", "left as it was"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/meta.json")));
  o.corpus.on_bad_record = BadRecordPolicy::skip;
  o.tokenizer_sample_bytes = 4000;
  const PrepareResult r = prepare_corpus(o);
  EXPECT_EQ(r.bad_records, 2u);
  EXPECT_EQ(r.empty_documents, 1u);
  EXPECT_EQ(r.train_documents + r.val_documents, 400u);
  const auto meta = read_meta(dir.file("out"));
  EXPECT_EQ(meta["bad_records"], 2);
  EXPECT_EQ(meta["empty_documents"], 1);
  ASSERT_EQ(meta["first_bad_records"].size(), 2u);
  EXPECT_EQ(meta["first_bad_records"][1].get<std::string>().rfind(dir.file("d.jsonl") + ":403: no field", 0), 0u);
  // The sample stopped at the first document past 4000 bytes of text.
  size_t bytes = 0, docs = 0;
  while (bytes < 4000) bytes += texts[docs++].size();
  EXPECT_EQ(meta["tokenizer_source"], "trained on the first " + std::to_string(docs) + " documents (" +
                                          std::to_string(bytes) + " bytes, --tokenizer-sample-mb)");
}

// A smaller prepare into a folder that held a larger one leaves none of the old shards behind.
TEST(Prepare, ANewPrepareReplacesEveryOldShard) {
  ff::testing::TempDir dir;
  const auto texts = record_texts(600);
  ff::testing::write_all(dir.file("d.jsonl"), as_jsonl(texts));
  PrepareOptions o;
  o.inputs = {dir.file("d.jsonl")};
  o.out_dir = dir.file("out");
  o.vocab_size = 320;
  o.shard_tokens = 1000;
  const PrepareResult many = prepare_corpus(o);
  ASSERT_GT(many.train_paths.size(), 3u);
  ff::testing::write_all(dir.file("out/notes.txt"), "mine");
  const std::vector<int32_t> tokens = concat_shards(many.train_paths);
  o.shard_tokens = 1u << 20;
  o.tokenizer = many.tokenizer_path;  // reused from the folder being replaced
  const PrepareResult few = prepare_corpus(o);
  ASSERT_EQ(few.train_paths.size(), 1u);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("out"))) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  // The trained tokenizer's listing (tokenizer.vocab) went with it: a reused model has none.
  EXPECT_EQ(names, (std::vector<std::string>{"meta.json", "notes.txt", "tokenizer.model", "train-00000.bin",
                                             "val-00000.bin"}));
  EXPECT_EQ(concat_shards(few.train_paths), tokens);
}

// Fine-tuning records: BOS + prompt + completion + EOS, the loss mask 1 on the completion's
// tokens and the EOS only, carried in every shard.
TEST(Prepare, PromptCompletionRecordsCarryALossMaskOnTheAnswer) {
  ff::testing::TempDir dir;
  const auto lines = verse_lines(200);
  ff::testing::write_all(dir.file("lines.txt"), join(lines, 0, lines.size()));
  const PrepareResult base = prepare_corpus(dir.file("lines.txt"), 320, dir.file("base"), 0.1);
  std::string body;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    pairs.emplace_back("Q: " + lines[i] + "\nA:", " " + lines[i + 1]);
    body += nlohmann::json({{"question", pairs.back().first}, {"answer", pairs.back().second}}).dump() + "\n";
  }
  ff::testing::write_all(dir.file("ft.data"), body);
  PrepareOptions o;
  o.inputs = {dir.file("ft.data")};
  o.out_dir = dir.file("ft");
  o.tokenizer = base.tokenizer_path;
  o.corpus.format = CorpusFormat::jsonl;
  o.corpus.prompt_completion = true;
  o.corpus.prompt_field = "question";
  o.corpus.completion_field = "answer";
  o.val_docs = 3;
  o.shard_tokens = 700;
  const PrepareResult r = prepare_corpus(o);
  ASSERT_GT(r.train_paths.size(), 1u);
  SentencePieceTokenizer tok(r.tokenizer_path);
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;
  for (size_t i = 3; i < pairs.size(); ++i) {
    const auto prompt = tok.encode(pairs[i].first), answer = tok.encode(pairs[i].second);
    ids.push_back(tok.bos_id());
    ids.insert(ids.end(), prompt.begin(), prompt.end());
    mask.insert(mask.end(), prompt.size() + 1, 0);
    ids.insert(ids.end(), answer.begin(), answer.end());
    ids.push_back(tok.eos_id());
    mask.insert(mask.end(), answer.size() + 1, 1);
  }
  std::vector<int32_t> got_ids;
  std::vector<uint8_t> got_mask;
  for (const std::string& p : r.train_paths) {
    const TokenShardReader shard(p);
    ASSERT_TRUE(shard.has_loss_mask()) << p;
    const size_t n = shard.info().tokens;
    std::vector<int32_t> part(n);
    std::vector<uint8_t> part_mask(n);
    shard.read_tokens(0, n, part.data());
    shard.read_loss_mask(0, n, part_mask.data());
    got_ids.insert(got_ids.end(), part.begin(), part.end());
    got_mask.insert(got_mask.end(), part_mask.begin(), part_mask.end());
  }
  EXPECT_EQ(got_ids, ids);
  EXPECT_EQ(got_mask, mask);
  EXPECT_EQ(r.val_documents, 3u);
  EXPECT_TRUE(read_token_shard_info(r.val_paths[0]).loss_mask);
  EXPECT_EQ(read_meta(dir.file("ft"))["loss_mask"], "1 on completion tokens and eos_id, 0 on bos_id and prompt");
}

// A reused Hugging Face tokenizer.json is stored under its own name and frames documents by its
// convention: GPT-2's byte-level post-processor adds nothing before a document, so only its end
// token (<|endoftext|>, id 30) follows each. Ids worked by hand in tests/io/test_hf_tokenizer.cpp.
TEST(Prepare, ReusedTokenizerJsonFramesDocumentsItsOwnWay) {
  ff::testing::TempDir dir;
  ff::testing::write_all(dir.file("gpt2-like.json"), ff::testing::tiny_byte_level_tokenizer_json().dump());
  ff::testing::write_all(dir.file("d.jsonl"),
                         "{\"text\": \"hello\"}\n{\"text\": \"hello world\"}\n{\"text\": \" world\"}\n{\"text\": \"lll\"}\n");
  PrepareOptions o;
  o.inputs = {dir.file("d.jsonl")};
  o.out_dir = dir.file("out");
  o.tokenizer = dir.file("gpt2-like.json");
  o.val_docs = 1;
  const PrepareResult r = prepare_corpus(o);
  EXPECT_EQ(r.tokenizer_path, dir.file("out/tokenizer.json"));
  EXPECT_EQ(ff::testing::read_all(r.tokenizer_path), ff::testing::read_all(dir.file("gpt2-like.json")));
  EXPECT_EQ(r.bos_id, -1);
  EXPECT_EQ(r.eos_id, 30);
  EXPECT_EQ(concat_shards(r.val_paths), (std::vector<int32_t>{13, 30}));
  EXPECT_EQ(concat_shards(r.train_paths), (std::vector<int32_t>{13, 11, 12, 2, 7, 30, 11, 12, 2, 7, 30, 8, 2, 30}));
  EXPECT_EQ(read_meta(dir.file("out"))["tokenizer"], "tokenizer.json");
  EXPECT_EQ(tokenizer_file_in(dir.file("out")), r.tokenizer_path);
  // A later prepare of the folder with a trained SentencePiece model leaves one tokenizer file.
  const auto lines = verse_lines(200);
  ff::testing::write_all(dir.file("lines.txt"), join(lines, 0, lines.size()));
  prepare_corpus(dir.file("lines.txt"), 320, dir.file("out"), 0.1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/tokenizer.json")));
  EXPECT_EQ(tokenizer_file_in(dir.file("out")), dir.file("out/tokenizer.model"));
}
