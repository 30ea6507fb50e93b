// Training checkpoints: damaged copies are refused or load identically; forged meta fields,
// re-written with valid checksums, are refused naming the file and the field unless they are
// values a user could have typed.
#include <cmath>
#include <vector>

#include "fuzz_util.h"
#include "io/checkpoint_file.h"
#include "model/parameters.h"
#include "train/checkpoint.h"

using namespace ff;
using namespace ff::fuzz;

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
};

Saved save_tiny(const std::string& path) {
  Saved s;
  s.state = {tiny_model(), 7, {2, 3}, "# config\n", 0xC0FFEEull, {}, std::nullopt};
  const size_t n = ParamLayout(s.state.model).total();
  for (auto* x : {&s.p, &s.m, &s.v}) {
    x->resize(n);
    for (size_t i = 0; i < n; ++i) (*x)[i] = float(i % 13) * 0.25f - float(x == &s.m);
  }
  save_checkpoint(path, s.state, s.p.data(), s.m.data(), s.v.data(), n);
  return s;
}

// Rewrites path with meta[key] (a "/"-separated JSON pointer) set to value; checksums are
// recomputed by the writer, so only the field checks stand between the forgery and a run.
void forge(const std::string& from, const std::string& to, const std::string& pointer,
           const nlohmann::json& value) {
  CheckpointReader r(from);
  nlohmann::json meta = r.meta();
  meta[nlohmann::json::json_pointer(pointer)] = value;
  CheckpointWriter w;
  w.set_meta(meta);
  for (const auto& name : r.section_names()) {
    const auto bytes = r.section(name);
    w.add_section(name, bytes.data(), bytes.size());
  }
  w.write(to);
}

CheckpointState load(const std::string& path, Saved& into) {
  return load_checkpoint(path, into.p.data(), into.m.data(), into.v.data(), into.p.size());
}

}  // namespace

TEST(FuzzCheckpoint, DamagedCopiesAreRefusedOrLoadIdentically) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.bin", path = dir + "/case.bin";
  const Saved good = save_tiny(good_path);
  const std::string bytes = read_bytes(good_path);
  RngState rng{16003, 0};
  for (int i = 0; i < 1000; ++i) {
    write_bytes(path, mutate(bytes, rng));
    Saved got = good;
    for (auto* x : {&got.p, &got.m, &got.v}) std::fill(x->begin(), x->end(), -99.0f);
    CheckpointState s;
    if (run_case(path, [&] { s = load(path, got); }) == Outcome::accepted) {
      ASSERT_EQ(s.step, 7) << "case " << i;
      ASSERT_EQ(describe_model_difference(s.model, good.state.model), "") << "case " << i;
      ASSERT_EQ(s.data.epoch, 2u);
      ASSERT_EQ(s.data.cursor, 3u);
      ASSERT_EQ(s.tokenizer_checksum, 0xC0FFEEull);
      ASSERT_EQ(got.p, good.p) << "case " << i;
      ASSERT_EQ(got.m, good.m);
      ASSERT_EQ(got.v, good.v);
    }
  }
}

// Each of these forgeries used to load.
TEST(FuzzCheckpoint, ForgedFieldsAreRefusedNamingTheField) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.bin", path = dir + "/forged.bin";
  Saved good = save_tiny(good_path);
  const uint64_t n = good.p.size();
  const std::vector<std::pair<std::string, nlohmann::json>> forgeries = {
      {"/step", -5},
      {"/step", 2147483648ll},
      {"/step", 1.5},
      {"/step", "7"},
      {"/step", nullptr},
      {"/data_epoch", 1000000000000ull},
      {"/data_epoch", -1},
      {"/data_cursor", 1.0},
      {"/num_params", n + 1},
      {"/num_params", 0},
      {"/tokenizer_checksum", -3},
      {"/config", 5},
      {"/model", "x"},
      {"/model/seq_len", 2147483648ll},
      {"/model/seq_len", 1000000000},
      {"/model/seq_len", 0},
      {"/model/seq_len", 4.0},
      {"/model/dim", "8"},
      {"/model/n_heads", 3},
      {"/model/vocab_size", -16},
      {"/model/rope_theta", 0},
      {"/model/rope_theta", -10000.0},
      {"/model/rope_theta", "10000"},
      {"/model/rms_eps", 0},
      {"/model/init_std", -1},
      {"/model/tied_embeddings", 1},
  };
  for (const auto& [pointer, value] : forgeries) {
    forge(good_path, path, pointer, value);
    std::string msg;
    try {
      load(path, good);
    } catch (const std::exception& e) {
      msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << pointer << " = " << value.dump() << " was accepted";
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    // The field is named as model.seq_len; n_heads = 3 is a shape error ModelConfig names itself.
    std::string field = pointer.substr(1);
    for (auto& ch : field) ch = ch == '/' ? '.' : ch;
    const bool shape_error = pointer == "/model/n_heads";
    EXPECT_NE(msg.find(shape_error ? "n_heads (3)" : "'" + field + "'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  }
  // Legitimate values still load: a changed rope_theta is a valid (other) model.
  forge(good_path, path, "/model/rope_theta", 5000.0);
  EXPECT_EQ(load(path, good).model.rope_theta, 5000.0f);
}

TEST(FuzzCheckpoint, RandomForgedMetaNeverLoadsOutOfRange) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.bin", path = dir + "/forged.bin";
  Saved good = save_tiny(good_path);
  const char* fields[] = {"/step", "/data_epoch", "/data_cursor", "/num_params", "/model/vocab_size",
                          "/model/dim", "/model/n_layers", "/model/n_heads", "/model/n_kv_heads",
                          "/model/ffn_dim", "/model/seq_len", "/model/rms_eps", "/model/rope_theta",
                          "/model/init_std", "/model/tied_embeddings", "/format"};
  const nlohmann::json values[] = {0, 1, 2, 4, 8, 16, -1, 3.5, 1e300, -0.0, "8", true, false, nullptr,
                                   nlohmann::json::array(), nlohmann::json::object(), 4294967296ull,
                                   18446744073709551615ull, -9223372036854775807ll};
  RngState rng{16004, 0};
  for (int i = 0; i < 400; ++i) {
    const char* field = fields[rng.next_below(std::size(fields))];
    forge(good_path, path, field, values[rng.next_below(std::size(values))]);
    CheckpointState s;
    if (run_case(path, [&] { s = load(path, good); }) == Outcome::accepted) {
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
