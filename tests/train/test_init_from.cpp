// init_from: a fresh run from a checkpoint's weights. Its first loss is the source model's loss on
// the same batch (computed by the eval path: the source checkpoint loaded for use, one forward);
// it loads the parameters and nothing of the optimizer (the trajectory equals a resume of a
// zero-moment step-0 checkpoint bitwise, and differs from one with the source's moments); a
// weights-only run folder trains in place from step 0; the model's tokenizer files are carried
// over; a resume ignores init_from; and bad input is refused by name before any heavy work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "init_from_fixtures.h"
#include "io/corpus/prepare.h"
#include "test_data.h"
#include "train/trainer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

constexpr int kSourceSteps = 5;

// configs/tiny.toml trained 5 steps: the model every case starts from (once per program).
struct Source {
  std::string dir;
  std::vector<float> params, m, v;
  ModelConfig model;
};
const Source& source() {
  static const Source s = [] {
    TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
    c.data = testkit::tiny_data_dir();
    c.steps = kSourceSteps;
    c.eval_every = 0;
    c.threads = 1;
    Source out;
    out.dir = testkit::temp_dir("source");
    Trainer t(c, out.dir);
    t.quiet = true;
    t.run();
    const size_t n = t.state().checkpoint_runs(false).params.front().count;
    out.params.resize(n), out.m.resize(n), out.v.resize(n);
    t.state().gather_full(out.params.data(), out.m.data(), out.v.data());
    out.model = t.config().model;
    return out;
  }();
  return s;
}

std::string what(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<StepRecord> train(const TrainConfig& c, const std::string& dir) {
  Trainer t(c, dir);
  t.quiet = true;
  t.run();
  return t.history();
}

bool same_bits(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i].loss, &b[i].loss, sizeof(double)) || std::memcmp(&a[i].grad_norm, &b[i].grad_norm, sizeof(double)))
      return false;
  return true;
}

// A full step-0 checkpoint (moments included, not weights-only) of the source's weights: resuming
// it is today's resume path, which loads the moments given.
std::string step0_checkpoint(const std::vector<float>& m, const std::vector<float>& v) {
  const std::string dir = testkit::temp_dir("step0");
  CheckpointState s;
  s.model = source().model;
  s.tokenizer_checksum = tokenizer_file_checksum(tokenizer_file_in(testkit::tiny_data_dir()));
  save_serial_checkpoint(dir, s, source().params.data(), m.data(), v.data());
  return dir;
}

}  // namespace

TEST(InitFrom, FirstLossIsTheSourceModelsLossOnThatBatchAndTheWeightsAreTheSources) {
  const std::string& data = testkit::tiny_data_dir();
  const std::string out = testkit::temp_dir("ft");
  const TrainConfig c = testkit::init_from_config(data, source().dir, out, 3);
  EXPECT_EQ(describe_model_difference(c.model, source().model), "");  // no model key given: all from DIR
  Trainer ft(c, out);
  ft.quiet = true;
  EXPECT_EQ(ft.step(), 0);
  const std::vector<float> loaded = ft.full_params();
  ASSERT_EQ(loaded.size(), source().params.size());
  EXPECT_EQ(std::memcmp(loaded.data(), source().params.data(), loaded.size() * 4), 0);
  // Parameters alone were read (a third of the source's data file, which holds the moments too),
  // staged through the reader's ledger-tracked buffer of at most kReadStagingBytes, which the
  // start-up memory estimate counts.
  const ReadStats& read = ft.start_read_stats();
  const auto file_bytes = fs::file_size(source().dir + "/step_" + std::to_string(kSourceSteps) + "/rank_00000.bin");
  EXPECT_GT(read.bytes_read, loaded.size() * 4);
  EXPECT_LT(read.bytes_read, file_bytes / 2);
  EXPECT_GT(read.staging_bytes, 0u);
  EXPECT_LE(read.staging_bytes, kReadStagingBytes);
  EXPECT_GE(uint64_t(MemoryLedger::instance().snapshot().peak[int(MemCategory::workspace)]), read.staging_bytes);
  ft.run();

  // The first global batch, drawn independently of the trainer, and the source checkpoint loaded
  // for use (the path `fivefold eval` takes): its mean loss on that batch.
  const double expected = testkit::source_loss_on_first_batch(c, source().dir);
  EXPECT_NEAR(ft.history().front().loss / expected, 1.0, 1e-6)
      << ft.history().front().loss << " vs the source model's " << expected;
  // Training went on from there (the model was not just evaluated).
  EXPECT_NE(ft.history().back().loss, ft.history().front().loss);
}

TEST(InitFrom, FreshOptimizerNotTheSources) {
  const std::string& data = testkit::tiny_data_dir();
  const std::string out = testkit::temp_dir("ft");
  const std::vector<StepRecord> init_from = train(testkit::init_from_config(data, source().dir, out, 4), out);
  // A fresh AdamW: zero moments at step 0, through the resume path that loads them.
  const std::vector<float> zeros(source().params.size(), 0.0f);
  TrainConfig fresh = testkit::init_from_config(data, source().dir, testkit::temp_dir("unused"), 4);
  fresh.init_from.clear();
  const std::vector<StepRecord> zero_moments = train(fresh, step0_checkpoint(zeros, zeros));
  EXPECT_TRUE(same_bits(init_from, zero_moments)) << "init_from's steps differ from a fresh AdamW's";
  // The source's moments would have moved it elsewhere: the comparison above can fail.
  const std::vector<StepRecord> with_moments = train(fresh, step0_checkpoint(source().m, source().v));
  EXPECT_FALSE(same_bits(init_from, with_moments));
}

TEST(InitFrom, WeightsOnlyRunFolderTrainsInPlaceFromStepZero) {
  const std::string& data = testkit::tiny_data_dir();
  const std::string imported = testkit::temp_dir("imported");
  testkit::write_weights_only_checkpoint(imported, source().model, source().params, tokenizer_file_in(data));
  {
    ShardedCheckpointReader r(imported + "/step_0");
    EXPECT_TRUE(r.has("params/model.norm.weight"));
    EXPECT_FALSE(r.has("adam_m/model.norm.weight"));
    EXPECT_FALSE(r.has("adam_v/model.norm.weight"));
  }
  // `fivefold train --out IMPORTED`: no init_from, the model from the folder's own checkpoint.
  TrainConfig c = testkit::init_from_config(data, "", imported, 4);
  Trainer t(c, imported);
  t.quiet = true;
  EXPECT_EQ(t.step(), 0);
  t.run();
  const std::string other = testkit::temp_dir("ft");
  EXPECT_TRUE(same_bits(t.history(), train(testkit::init_from_config(data, source().dir, other, 4), other)));
  // Its own save is a full checkpoint, which the same command then resumes.
  const std::optional<CheckpointMeta> saved = read_latest_checkpoint_meta(imported);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->state.step, 4);
  EXPECT_FALSE(saved->state.weights_only);
}

TEST(InitFrom, ResumeIgnoresInitFrom) {
  const std::string& data = testkit::tiny_data_dir();
  const std::string out = testkit::temp_dir("ft");
  TrainConfig c = testkit::init_from_config(data, source().dir, out, 6);
  c.stop_at = 3;
  train(c, out);
  c = testkit::init_from_config(data, source().dir, out, 6);  // the same command again
  Trainer t(c, out);
  EXPECT_EQ(t.step(), 3);
}

TEST(InitFrom, TheModelsTokenizerFilesAreCarriedOver) {
  const std::string& data = testkit::tiny_data_dir();
  // The model's folder with a side file the data folder lacks.
  const std::string from = testkit::temp_dir("model");
  for (const auto& e : fs::directory_iterator(source().dir)) fs::copy(e.path(), fs::path(from) / e.path().filename(), fs::copy_options::recursive);
  const std::string side = R"({"tokenizer_class": "LlamaTokenizer", "note": "carried byte for byte"})";
  std::ofstream(from + "/tokenizer_config.json") << side;
  const std::string out = testkit::temp_dir("ft");
  train(testkit::init_from_config(data, from, out, 1), out);
  std::ifstream f(out + "/tokenizer_config.json");
  const std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, side);
}

TEST(InitFrom, ModelVocabularyLargerThanTheTokenizerTrains) {
  const std::string& data = testkit::tiny_data_dir();
  ModelConfig m = source().model;
  m.vocab_size += 8;  // padded, as Qwen2.5's is
  const ParamLayout layout(m);
  std::vector<float> params(layout.total());
  init_parameters(params.data(), layout, m, 3);
  const std::string dir = testkit::temp_dir("padded");
  testkit::write_weights_only_checkpoint(dir, m, params, tokenizer_file_in(data));
  const std::string out = testkit::temp_dir("ft");
  const std::vector<StepRecord> h = train(testkit::init_from_config(data, dir, out, 2), out);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_TRUE(std::isfinite(h[1].loss));
  // sample, eval and export load it too (the tokenizer smaller than the model).
  EXPECT_EQ(load_trained_model(out, 1).state.model.vocab_size, m.vocab_size);
}

TEST(InitFrom, MoeRouterBiasComesFromTheCheckpoint) {
  const std::string& data = testkit::tiny_data_dir();
  TrainConfig s = load_train_config(testkit::config_path("tiny.toml"), {});
  s.data = data, s.steps = 3, s.eval_every = 0, s.threads = 1;
  s.model.moe.n_experts = 4, s.model.moe.top_k = 2, s.model.moe.router_bias_update = 0.01f;
  const std::string src = testkit::temp_dir("moe-source");
  train(s, src);
  const std::vector<float> bias = read_latest_checkpoint_meta(src)->state.router_bias;
  ASSERT_EQ(bias.size(), 2u * 4u);
  EXPECT_NE(bias, std::vector<float>(8, 0.0f));  // the bias moved: the check below can fail
  const std::string out = testkit::temp_dir("ft");
  Trainer t(testkit::init_from_config(data, src, out, 2), out);
  t.quiet = true;
  t.save();  // step 0: what the run holds before any step
  t.finish_saves();
  EXPECT_EQ(read_latest_checkpoint_meta(out)->state.router_bias, bias);
}

TEST(InitFrom, Refusals) {
  const std::string& data = testkit::tiny_data_dir();
  const std::string& from = source().dir;
  // A shape key set to another value, in a config file and as a flag, named with both values.
  const std::string toml = testkit::temp_dir("cfg") + "/ft.toml";
  std::ofstream(toml) << "dim = 48\nn_heads = 4\n";
  KeySources set_by;
  TrainConfig c = load_train_config(toml, {{"n-layers", "3"}}, &set_by);
  c.init_from = from;
  std::string e = what([&] { take_model_from_checkpoint(c, testkit::temp_dir("o"), set_by); });
  EXPECT_NE(e.find("dim is 64 in " + from + "'s checkpoint but 48 here (" + toml + ":1)"), std::string::npos) << e;
  std::ofstream(toml) << "dim = 64\nn_heads = 4\n";  // the same values pass; the flag is still wrong
  set_by.clear();
  c = load_train_config(toml, {{"n-layers", "3"}}, &set_by);
  c.init_from = from;
  e = what([&] { take_model_from_checkpoint(c, testkit::temp_dir("o"), set_by); });
  EXPECT_NE(e.find("n_layers is 2 in " + from + "'s checkpoint but 3 here (--n-layers); drop the key or make it 2"),
            std::string::npos) << e;

  // seq_len: any value up to the model's context, refused above it naming the rule.
  TrainConfig longer;
  longer.data = data, longer.init_from = from, longer.model.seq_len = 64;
  e = what([&] { take_model_from_checkpoint(longer, testkit::temp_dir("o"), {{"seq_len", "--seq-len"}}); });
  EXPECT_NE(e.find("seq_len' is 64 here (--seq-len) but the model in '" + from + "' serves at most 32 positions"),
            std::string::npos) << e;
  TrainConfig shorter = longer;
  shorter.model.seq_len = 16;
  take_model_from_checkpoint(shorter, testkit::temp_dir("o"), {{"seq_len", "--seq-len"}});
  EXPECT_EQ(shorter.model.seq_len, 16);
  EXPECT_EQ(shorter.model.context_length(), 32);  // the model still serves its context

  // A data folder made with another tokenizer: both files named, and the prepare command.
  const std::string other = testkit::temp_dir("other");
  testkit::write_corpus_text(other + "/corpus.txt", 3000, 7);
  prepare_corpus(other + "/corpus.txt", 310, other + "/prepared", 0.1);
  e = what([&] {
    const std::string out = testkit::temp_dir("o");
    Trainer t(testkit::init_from_config(other + "/prepared", from, out, 2), out);
  });
  EXPECT_NE(e.find("tokenizer '" + tokenizer_file_in(other + "/prepared") + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("`fivefold prepare --tokenizer " + tokenizer_file_in(from)), std::string::npos) << e;

  // A tokenizer with more ids than the model has rows.
  ModelConfig small = source().model;
  small.vocab_size = 300;
  const ParamLayout layout(small);
  std::vector<float> params(layout.total(), 0.01f);
  const std::string small_dir = testkit::temp_dir("small");
  testkit::write_weights_only_checkpoint(small_dir, small, params, tokenizer_file_in(data));
  e = what([&] {
    const std::string out = testkit::temp_dir("o");
    Trainer t(testkit::init_from_config(data, small_dir, out, 2), out);
  });
  EXPECT_NE(e.find("has 320 tokens but the model in '" + small_dir + "' has only 300 (vocab_size)"), std::string::npos)
      << e;

  // No checkpoint: a missing folder, an empty one, a damaged manifest; each named with the fix.
  e = what([&] { testkit::init_from_config(data, "/nonexistent/model", testkit::temp_dir("o"), 2); });
  EXPECT_NE(e.find("'init_from': '/nonexistent/model' is not a folder"), std::string::npos) << e;
  const std::string empty = testkit::temp_dir("empty");
  e = what([&] { testkit::init_from_config(data, empty, testkit::temp_dir("o"), 2); });
  EXPECT_NE(e.find("no weights to start from in '" + empty + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("Name a folder `fivefold import --out`"), std::string::npos) << e;
  const std::string damaged = testkit::temp_dir("damaged");
  fs::copy(from + "/step_" + std::to_string(kSourceSteps), damaged + "/step_5", fs::copy_options::recursive);
  {
    std::fstream f(damaged + "/step_5/manifest.json", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('#');
  }
  e = what([&] { testkit::init_from_config(data, damaged + "/step_5", testkit::temp_dir("o"), 2); });
  EXPECT_NE(e.find("no weights to start from in '" + damaged + "/step_5'"), std::string::npos) << e;
  // A damaged parameter block (the data file's first third holds the parameters) is found while
  // loading, named with the file.
  const std::string bad_data = testkit::temp_dir("bad-data");
  fs::copy(from + "/step_5", bad_data + "/step_5", fs::copy_options::recursive);
  {
    std::fstream f(bad_data + "/step_5/rank_00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const std::streamoff at = f.tellg() / 10;
    f.seekg(at);
    const char x = char(f.get() ^ 0x5a);
    f.seekp(at);
    f.put(x);
  }
  e = what([&] {
    const std::string out = testkit::temp_dir("o");
    Trainer t(testkit::init_from_config(data, bad_data + "/step_5", out, 2), out);
  });
  EXPECT_NE(e.find("cannot start from the weights in '" + bad_data + "/step_5': the checkpoint is damaged"),
            std::string::npos) << e;
  EXPECT_NE(e.find("rank_00000.bin"), std::string::npos) << e;
}
