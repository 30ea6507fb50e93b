// Training on a mixture of data folders and on folders of many shards: the config key, the
// refusals, bitwise equalities with the plain run, and resume.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "io/corpus/prepare.h"
#include "io/tokens/token_shard.h"
#include "io/tokenizer/tokenizer.h"
#include "mixture_data.h"
#include "test_data.h"
#include "train/data_mixture.h"
#include "train/trainer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny(const std::string& data, int steps) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = data;
  c.steps = steps;
  c.eval_every = 0;
  return c;
}

std::vector<StepRecord> train(const TrainConfig& c, const std::string& tag) {
  Trainer t(c, testkit::temp_dir(tag));
  t.quiet = true;
  t.run();
  return t.history();
}

void expect_same_losses(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a[i].loss, &b[i].loss, sizeof(double)), 0) << "step " << i + 1 << ": " << a[i].loss << " vs " << b[i].loss;
    EXPECT_EQ(std::memcmp(&a[i].grad_norm, &b[i].grad_norm, sizeof(double)), 0) << "step " << i + 1;
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_words(const std::string& msg, std::initializer_list<std::string> words) {
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "missing \"" << w << "\" in: " << msg;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

}  // namespace

TEST(DataMixture, TomlListAndCommandLineGiveTheSameFolders) {
  const std::string a = testkit::tiny_data_dir(), b = testkit::mixture_partner_dir();
  const std::string path = testkit::temp_dir("cfg") + "/mix.toml";
  std::ofstream(path) << "data = [\"" << a << ":0.3\", \"" << b << ":0.7\"]\n";
  const TrainConfig from_file = load_train_config(path, {});
  const TrainConfig from_line = load_train_config("", {{"data", a + ":0.3," + b + ":0.7"}});
  EXPECT_EQ(from_file.data, from_line.data);
  const std::vector<DataFolder> f = data_folders(from_file.data);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].dir, a);
  EXPECT_EQ(f[1].dir, b);
  EXPECT_NEAR(f[0].weight, 0.3, 1e-15);
  EXPECT_NEAR(f[1].weight, 0.7, 1e-15);
  // Weights are normalised; a plain folder weighs 1.
  const std::vector<DataFolder> g = data_folders(a + ":2," + b + ":6");
  EXPECT_NEAR(g[0].weight, 0.25, 1e-15);
  EXPECT_EQ(data_folders(a).size(), 1u);
  EXPECT_EQ(data_folders(a)[0].weight, 1.0);
  // The resolved config reads back as the same mixture.
  const std::string saved = testkit::temp_dir("cfg") + "/config.toml";
  std::ofstream(saved) << config_to_toml(from_file);
  EXPECT_EQ(load_train_config(saved, {}).data, from_file.data);
}

TEST(DataMixture, BadEntriesAreRefusedNamingTheKeyAndTheFix) {
  const std::string a = testkit::tiny_data_dir(), b = testkit::mixture_partner_dir();
  expect_words(error_of([&] { data_folders(a + ":0.5," + b + ":0"); }), {"'data'", "'0'", b, "positive number", "FOLDER:WEIGHT"});
  expect_words(error_of([&] { data_folders(a + ":-1," + b + ":1"); }), {"'data'", "'-1'", "positive number"});
  expect_words(error_of([&] { data_folders(a + ":abc," + b + ":1"); }), {"'data'", "'abc'", "positive number"});
  expect_words(error_of([&] { data_folders(a + ":nan," + b + ":1"); }), {"'data'", "'nan'"});
  expect_words(error_of([&] { data_folders(a + ":0.5," + a + "/.:0.5"); }), {"'data'", "given twice", "give each folder once"});
  expect_words(error_of([&] { data_folders(a + ":0.5,/nonexistent/web:0.5"); }),
               {"'data'", "/nonexistent/web", "does not exist", "fivefold prepare"});
  expect_words(error_of([&] { data_folders(a + ":0.5,"); }), {"'data'", "empty entry"});
  const std::string path = testkit::temp_dir("cfg") + "/bad.toml";
  std::ofstream(path) << "data = [\"" << a << ":0.5\", 3]\n";
  expect_words(error_of([&] { load_train_config(path, {}); }), {"bad.toml:1", "'data'", "FOLDER:WEIGHT"});
}

TEST(DataMixture, OneFolderWithAWeightEqualsThePlainRunBitwise) {
  const std::string a = testkit::tiny_data_dir();
  expect_same_losses(train(tiny(a + ":2.5", 4), "weighted"), train(tiny(a, 4), "plain"));
}

TEST(DataMixture, ManyShardsEqualTheSameTokensInOneShardBitwise) {
  TrainConfig one = tiny(testkit::tiny_data_dir(), 4), many = tiny(testkit::tiny_sharded_dir(), 4);
  one.eval_every = many.eval_every = 2;  // validation reads its two shards too
  Trainer t1(one, testkit::temp_dir("one")), t3(many, testkit::temp_dir("many"));
  t1.quiet = t3.quiet = true;
  t1.run();
  t3.run();
  expect_same_losses(t1.history(), t3.history());
  const double v1 = t1.evaluate(), v3 = t3.evaluate();
  EXPECT_EQ(std::memcmp(&v1, &v3, sizeof v1), 0) << v1 << " vs " << v3;
}

TEST(DataMixture, ResumeMidEpochIsBitIdenticalAndRowsFollowTheWeights) {
  const std::string data = testkit::tiny_data_dir() + ":0.3," + testkit::mixture_partner_dir() + ":0.7";
  const TrainConfig cfg = tiny(data, 12);
  Trainer straight(cfg, testkit::temp_dir("mix-straight"));
  straight.quiet = true;
  straight.run();

  const std::string dir = testkit::temp_dir("mix-split");
  TrainConfig first = cfg;
  first.stop_at = 5;
  std::vector<StepRecord> history;
  {
    Trainer t(first, dir);
    t.quiet = true;
    t.run();
    history = t.history();
  }
  Trainer second(cfg, dir);
  second.quiet = true;
  ASSERT_EQ(second.step(), 5);
  second.run();
  history.insert(history.end(), second.history().begin(), second.history().end());
  expect_same_losses(history, straight.history());
  const std::vector<float> a = second.full_params(), b = straight.full_params();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // 12 steps x 4 rows = 48 rows: 0.3 and 0.7 give 14.4 and 33.6, so 14 or 15 and 34 or 33.
  const auto& rows = straight.data_rows_per_folder();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0] + rows[1], 48u);
  EXPECT_LT(std::fabs(double(rows[0]) - 14.4), 1.0);
  EXPECT_EQ(second.data_rows_per_folder(), rows);
  // Mixing changed what was trained on: the losses differ from the first folder alone.
  const std::vector<StepRecord> alone = train(tiny(testkit::tiny_data_dir(), 12), "alone");
  EXPECT_NE(alone.back().loss, straight.history().back().loss);
}

TEST(DataMixture, AFolderWithAnotherTokenizerIsRefusedNamingBothChecksums) {
  const std::string tiny_dir = testkit::tiny_data_dir();
  const std::string other = testkit::temp_dir("other-tok");
  testkit::write_corpus_text(other + "/corpus.txt", 1500, 99);
  prepare_corpus(other + "/corpus.txt", 320, other + "/prepared", 0.1);
  const std::string other_dir = other + "/prepared";
  const uint64_t mine = open_tokenizer(tiny_dir + "/tokenizer.model")->checksum();
  const uint64_t theirs = open_tokenizer(other_dir + "/tokenizer.model")->checksum();
  ASSERT_NE(mine, theirs);
  const std::string msg = error_of([&] { Trainer t(tiny(tiny_dir + ":0.5," + other_dir + ":0.5", 2), testkit::temp_dir("refused")); });
  expect_words(msg, {"'data'", tiny_dir, other_dir, hex(mine), hex(theirs), "--tokenizer"});

  // The tokenizer files agree but the shards were encoded by the other one.
  const std::string mixed = testkit::make_sharded_folder(
      "foreign-shards", tiny_dir, read_token_shard(testkit::only_shard(other_dir, "train")), read_token_shard(testkit::only_shard(other_dir, "val")), 2,
      read_token_shard_info(testkit::only_shard(other_dir, "train")).tokenizer_checksum);
  const std::string msg2 = error_of([&] { Trainer t(tiny(tiny_dir + ":0.5," + mixed + ":0.5", 2), testkit::temp_dir("refused")); });
  expect_words(msg2, {"'data'", tiny_dir, mixed, "train-00000.bin", hex(mine), hex(theirs)});
}

TEST(DataMixture, ThePlanAndTheRealisedRowsAreDescribed) {
  const std::string a = testkit::tiny_data_dir(), b = testkit::mixture_partner_dir();
  TrainConfig c = tiny(a + ":1," + b + ":3", 1);
  const RunTokenizer tok = open_run_tokenizer(c);
  c.model.vocab_size = tok.vocab_size;
  const RunTokens tokens = read_run_tokens(c, tok);
  MixtureLoader loader(tokens.train, c.model.seq_len, c.seed);
  const uint64_t windows_b = (tokens.train[1].tokens->size() - 1) / uint64_t(c.model.seq_len);
  expect_words(describe_data_plan(tokens, loader),
               {"2 folders", a + " 0.250", b + " 0.750", std::to_string(windows_b) + " windows", "3 shards"});
  std::vector<int32_t> x(8 * 32), y(8 * 32);
  loader.next_batch(8, 0, 8, x.data(), y.data());
  expect_words(describe_data_realised(tokens, loader), {"8 in all", a + " 2 (0.2500", b + " 6 (0.7500"});
  // One folder: nothing to describe, as before mixtures.
  TrainConfig plain = tiny(a, 1);
  plain.model.vocab_size = tok.vocab_size;
  const RunTokens one = read_run_tokens(plain, tok);
  EXPECT_EQ(describe_data_plan(one, MixtureLoader(one.train, 32, 1)), "");
}
