// Training checkpoints as training writes them (a step folder: the manifest and a data file per
// rank): damaged copies of either file are refused naming the checkpoint or load identically;
// forged manifest fields, written back with a valid checksum, are refused naming the manifest and
// the field unless they are values a user could have typed.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "../ckpt/rewrite_manifest.h"
#include "ckpt/meta.h"
#include "ckpt/saver.h"
#include "ckpt/sharded.h"
#include "fuzz_util.h"
#include "model/parameters.h"

using namespace ff;
using namespace ff::fuzz;
using ff::testing::rewrite_manifest;

namespace {

ModelConfig tiny_model() {
  ModelConfig c;
  c.vocab_size = 16, c.dim = 8, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 1, c.ffn_dim = 8;
  c.seq_len = 4;
  return c;
}

struct Saved {
  CheckpointState state;
  std::vector<float> p, m, v;
  std::string step_dir, manifest;
};

// Step 7 of one serial rank in run_dir.
Saved save_tiny(const std::string& run_dir) {
  Saved s;
  s.state.model = tiny_model();
  s.state.step = 7;
  s.state.data = {2, 3};
  s.state.config_toml = "# config\n";
  s.state.tokenizer_checksum = 0xC0FFEEull;
  const size_t n = ParamLayout(s.state.model).total();
  for (auto* x : {&s.p, &s.m, &s.v}) {
    x->resize(n);
    for (size_t i = 0; i < n; ++i) (*x)[i] = float(i % 13) * 0.25f - float(x == &s.m);
  }
  save_serial_checkpoint(run_dir, s.state, s.p.data(), s.m.data(), s.v.data());
  s.step_dir = step_dir_path(run_dir, 7);
  s.manifest = (std::filesystem::path(s.step_dir) / kManifestName).string();
  return s;
}

// What sample, eval and export read of a step folder (its state), then every tensor of it.
CheckpointState load(const std::string& step_dir, Saved& into) {
  const CheckpointMeta meta = checkpoint_meta_in(step_dir);
  const ParamLayout layout(meta.state.model);
  const size_t n = into.p.size();
  if (layout.total() != n) {  // accepted as another model: a failure of the checks, not a refusal
    ADD_FAILURE() << step_dir << " loaded as a model of " << layout.total() << " parameters, not " << n;
    return meta.state;
  }
  ShardedCheckpointReader reader(step_dir);
  read_state_pieces(reader, layout, {{{0, n, into.p.data()}}, {{0, n, into.m.data()}}, {{0, n, into.v.data()}}});
  return meta.state;
}

// good's manifest again, with the field at pointer set to value and a valid checksum.
void forge(const Saved& good, const std::string& good_manifest, const std::string& pointer,
           const nlohmann::json& value) {
  write_bytes(good.manifest, good_manifest);
  rewrite_manifest(good.step_dir, [&](nlohmann::json& body) { body[nlohmann::json::json_pointer(pointer)] = value; });
}

}  // namespace

TEST(FuzzCheckpoint, DamagedCopiesAreRefusedOrLoadIdentically) {
  const Scratch scratch;
  const Saved good = save_tiny(scratch.path());
  const std::string files[] = {good.manifest, good.step_dir + "/" + shard_file_name(0)};
  const std::string bytes[] = {read_bytes(files[0]), read_bytes(files[1])};
  RngState rng{16003, 0};
  for (int i = 0; i < 1000; ++i) {
    const int f = i % 2;  // the manifest, then the data file
    write_bytes(files[f], mutate(bytes[f], rng));
    Saved got = good;
    for (auto* x : {&got.p, &got.m, &got.v}) std::fill(x->begin(), x->end(), -99.0f);
    CheckpointState s;
    if (run_case(good.step_dir, [&] { s = load(good.step_dir, got); }) == Outcome::accepted) {
      ASSERT_EQ(s.step, 7) << "case " << i;
      ASSERT_EQ(describe_model_difference(s.model, good.state.model), "") << "case " << i;
      ASSERT_EQ(s.data.epoch, 2u);
      ASSERT_EQ(s.data.cursor, 3u);
      ASSERT_EQ(s.tokenizer_checksum, 0xC0FFEEull);
      ASSERT_EQ(got.p, good.p) << "case " << i;
      ASSERT_EQ(got.m, good.m);
      ASSERT_EQ(got.v, good.v);
    }
    write_bytes(files[f], bytes[f]);
  }
}

// Each of these forgeries used to load.
TEST(FuzzCheckpoint, ForgedFieldsAreRefusedNamingTheField) {
  const Scratch scratch;
  Saved good = save_tiny(scratch.path());
  const std::string good_manifest = read_bytes(good.manifest);
  const uint64_t n = good.p.size();
  // Manifest pointers: the model is the manifest's config, the rest of the state its state.
  const std::vector<std::pair<std::string, nlohmann::json>> forgeries = {
      {"/state/data_epoch", 1000000000000ull},
      {"/state/data_epoch", -1},
      {"/state/data_cursor", 1.0},
      {"/state/num_params", n + 1},
      {"/state/num_params", 0},
      {"/state/tokenizer_checksum", -3},
      {"/state/config", 5},
      {"/config", "x"},
      {"/config/seq_len", 2147483648ll},
      {"/config/seq_len", 1000000000},
      {"/config/seq_len", 0},
      {"/config/seq_len", 4.0},
      {"/config/dim", "8"},
      {"/config/n_heads", 3},
      {"/config/vocab_size", -16},
      {"/config/rope_theta", 0},
      {"/config/rope_theta", -10000.0},
      {"/config/rope_theta", "10000"},
      {"/config/rms_eps", 0},
      {"/config/init_std", -1},
      {"/config/tied_embeddings", 1},
  };
  for (const auto& [pointer, value] : forgeries) {
    forge(good, good_manifest, pointer, value);
    std::string msg;
    try {
      load(good.step_dir, good);
    } catch (const std::exception& e) {
      msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << pointer << " = " << value.dump() << " was accepted";
    EXPECT_NE(msg.find(good.manifest), std::string::npos) << msg;
    // Named as the user knows it (model.seq_len, data_epoch); n_heads = 3 is a shape error
    // ModelConfig names itself.
    const bool model = pointer.rfind("/config", 0) == 0;  // "/config" and "/state/" are 7 long
    std::string field = (model ? "model" : "") + pointer.substr(7);
    for (auto& ch : field) ch = ch == '/' ? '.' : ch;
    const bool shape_error = pointer == "/config/n_heads";
    EXPECT_NE(msg.find(shape_error ? "n_heads (3)" : "'" + field + "'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  }
  // The step is the folder's: a manifest naming any other is refused, naming the folder.
  for (const nlohmann::json& step : {nlohmann::json(-5), nlohmann::json(2147483648ll), nlohmann::json(1.5),
                                     nlohmann::json("7"), nlohmann::json(nullptr)}) {
    forge(good, good_manifest, "/step", step);
    EXPECT_EQ(run_case(good.step_dir, [&] { load(good.step_dir, good); }), Outcome::refused) << step.dump();
  }
  // Legitimate values still load: a changed rope_theta is a valid (other) model.
  forge(good, good_manifest, "/config/rope_theta", 5000.0);
  EXPECT_EQ(load(good.step_dir, good).model.rope_theta, 5000.0f);
}

TEST(FuzzCheckpoint, RandomForgedMetaNeverLoadsOutOfRange) {
  const Scratch scratch;
  Saved good = save_tiny(scratch.path());
  const std::string good_manifest = read_bytes(good.manifest);
  const char* fields[] = {"/step", "/state/data_epoch", "/state/data_cursor", "/state/num_params",
                          "/config/vocab_size", "/config/dim", "/config/n_layers", "/config/n_heads",
                          "/config/n_kv_heads", "/config/ffn_dim", "/config/seq_len", "/config/rms_eps",
                          "/config/rope_theta", "/config/init_std", "/config/tied_embeddings", "/state/format"};
  const nlohmann::json values[] = {0, 1, 2, 4, 8, 16, -1, 3.5, 1e300, -0.0, "8", true, false, nullptr,
                                   nlohmann::json::array(), nlohmann::json::object(), 4294967296ull,
                                   18446744073709551615ull, -9223372036854775807ll};
  RngState rng{16004, 0};
  for (int i = 0; i < 400; ++i) {
    const char* field = fields[rng.next_below(std::size(fields))];
    forge(good, good_manifest, field, values[rng.next_below(std::size(values))]);
    CheckpointState s;
    if (run_case(good.step_dir, [&] { s = load(good.step_dir, good); }) == Outcome::accepted) {
      // Accepted: then it is a checkpoint a user could have made (checked independently).
      ASSERT_GE(s.step, 0);
      ASSERT_LE(s.step, 1000000000);
      ASSERT_NO_THROW(s.model.validate());
      ASSERT_LE(s.model.seq_len, 1 << 20);
      ASSERT_TRUE(std::isfinite(s.model.rope_theta) && s.model.rope_theta > 0);
      ASSERT_EQ(ParamLayout(s.model).total(), good.p.size());
    }
  }
}
