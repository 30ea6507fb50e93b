#include "ckpt/checkpoint_state.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "model/parameters.h"

namespace ff {

namespace {

// Reads fields of one JSON object as if a user had typed them: the exact JSON type (no float
// taken as an integer, no 2^31 wrapped into an int) and a range, or an error naming the source,
// the field and the range. nlohmann's own type errors never reach the user.
class MetaFields {
 public:
  MetaFields(const nlohmann::json& j, std::string source, std::string prefix)
      : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) fail("", fmt::format("is {}, not an object", j_.type_name()));
  }
  const nlohmann::json& at(const char* key) const {
    if (!j_.contains(key)) fail(key, "is missing");
    return j_.at(key);
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const auto& v = at(key);
    if (!v.is_number_integer()) fail(key, fmt::format("is {}, not an integer", v.dump()));
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(key, fmt::format("is {}, outside [{}, {}]", v.dump(), lo, hi));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(key, fmt::format("is {}, outside [{}, {}]", x, lo, hi));
    return x;
  }
  uint64_t unsigned_integer(const char* key, uint64_t hi) const {
    const auto& v = at(key);
    if (!v.is_number_unsigned()) fail(key, fmt::format("is {}, not a non-negative integer", v.dump()));
    const uint64_t x = v.get<uint64_t>();
    if (x > hi) fail(key, fmt::format("is {}, above the limit {}", x, hi));
    return x;
  }
  // Positive and finite unless zero_ok; hi bounds it from above.
  float real(const char* key, bool zero_ok, double hi) const {
    const auto& v = at(key);
    if (!v.is_number()) fail(key, fmt::format("is {}, not a number", v.dump()));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (x == 0 && !zero_ok) || x > hi)
      fail(key, fmt::format("is {}, outside {}0, {}]", x, zero_ok ? "[" : "(", hi));
    return float(x);
  }
  bool boolean(const char* key) const {
    const auto& v = at(key);
    if (!v.is_boolean()) fail(key, fmt::format("is {}, not true or false", v.dump()));
    return v.get<bool>();
  }
  std::string text(const char* key) const {
    const auto& v = at(key);
    if (!v.is_string()) fail(key, fmt::format("is {}, not a string", v.dump()));
    return v.get<std::string>();
  }
  template <typename T>
  T choice(const char* key, const EnumTable<T>& names) const {
    const std::string name = text(key);
    if (std::optional<T> value = names.find(name)) return *value;
    fail(key, fmt::format("is \"{}\", not {}", name, names.choices()));
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    const std::string field = prefix_ + (prefix_.empty() || key.empty() ? "" : ".") + key;
    throw std::runtime_error(fmt::format(
        "{}: field '{}' {}; the file was altered or written by another program, use an earlier "
        "checkpoint",
        source_, field.empty() ? "meta" : field, problem));
  }

 private:
  const nlohmann::json& j_;
  std::string source_;
  std::string prefix_;
};

}  // namespace

nlohmann::json model_config_to_json(const ModelConfig& c) {
  nlohmann::json j = {{"vocab_size", c.vocab_size}, {"dim", c.dim},           {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},       {"n_kv_heads", c.n_kv_heads}, {"ffn_dim", c.ffn_dim},
          {"seq_len", c.seq_len},       {"rms_eps", c.rms_eps},   {"rope_theta", c.rope_theta},
          {"tied_embeddings", c.tied_embeddings}, {"init_std", c.init_std}};
  // Keys a plain LLaMA leaves at their defaults are written only when set, so its meta is what it
  // always was and older checkpoints read unchanged.
  if (c.max_positions > 0) j["max_positions"] = c.max_positions;
  if (c.head_size > 0) j["head_dim"] = c.head_size;
  if (c.qkv_bias) j["qkv_bias"] = true;
  const RopeScaling& r = c.rope_scaling;
  if (r.kind != RopeScalingKind::none) {
    j["rope_scaling"] = {{"kind", rope_scaling_names().name(r.kind)}, {"factor", r.factor}};
    if (r.kind == RopeScalingKind::llama3) {
      j["rope_scaling"]["low_freq_factor"] = r.low_freq_factor;
      j["rope_scaling"]["high_freq_factor"] = r.high_freq_factor;
      j["rope_scaling"]["original_context"] = r.original_context;
    }
  }
  // Only an MoE model writes the section, so a dense model's meta is what it always was.
  const MoeConfig& m = c.moe;
  if (m.enabled())
    j["moe"] = {{"n_experts", m.n_experts}, {"top_k", m.top_k}, {"expert_ffn_dim", m.expert_ffn_dim},
                {"moe_layers", m.moe_layers}, {"shared_experts", m.shared_experts},
                {"router", router_names().name(m.router)},
                {"aux_loss_coeff", m.aux_loss_coeff}, {"z_loss_coeff", m.z_loss_coeff},
                {"router_bias_update", m.router_bias_update}, {"capacity_factor", m.capacity_factor}};
  return j;
}

ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& source) {
  const MetaFields f(j, source, "model");
  ModelConfig c;
  c.vocab_size = int(f.integer("vocab_size", 1, kMaxVocab));
  c.dim = int(f.integer("dim", 1, kMaxDim));
  c.n_layers = int(f.integer("n_layers", 1, kMaxLayers));
  c.n_heads = int(f.integer("n_heads", 1, kMaxDim));
  c.n_kv_heads = int(f.integer("n_kv_heads", 1, kMaxDim));
  c.ffn_dim = int(f.integer("ffn_dim", 1, 16 * kMaxDim));
  c.seq_len = int(f.integer("seq_len", 1, kMaxSeqLen));
  c.rms_eps = f.real("rms_eps", false, 1.0);
  c.rope_theta = f.real("rope_theta", false, 1e12);
  c.tied_embeddings = f.boolean("tied_embeddings");
  c.init_std = f.real("init_std", true, 10.0);
  if (j.contains("max_positions")) c.max_positions = int(f.integer("max_positions", 1, kMaxSeqLen));
  if (j.contains("head_dim")) c.head_size = int(f.integer("head_dim", 1, kMaxDim));
  if (j.contains("qkv_bias")) c.qkv_bias = f.boolean("qkv_bias");
  if (j.contains("rope_scaling")) {
    const MetaFields r(j.at("rope_scaling"), source, "model.rope_scaling");
    c.rope_scaling.kind = r.choice("kind", rope_scaling_names());
    c.rope_scaling.factor = r.real("factor", false, 1e6);
    if (c.rope_scaling.kind == RopeScalingKind::llama3) {
      c.rope_scaling.low_freq_factor = r.real("low_freq_factor", false, 1e6);
      c.rope_scaling.high_freq_factor = r.real("high_freq_factor", false, 1e6);
      c.rope_scaling.original_context = int(r.integer("original_context", 1, kMaxSeqLen));
    }
  }
  if (j.contains("moe")) {
    const MetaFields m(j.at("moe"), source, "model.moe");
    c.moe.n_experts = int(m.integer("n_experts", 1, 1 << 16));
    c.moe.top_k = int(m.integer("top_k", 1, 1 << 16));
    c.moe.expert_ffn_dim = int(m.integer("expert_ffn_dim", 0, 16 * kMaxDim));
    c.moe.moe_layers = m.text("moe_layers");
    c.moe.shared_experts = int(m.integer("shared_experts", 0, 1 << 16));
    c.moe.router = m.choice("router", router_names());
    c.moe.aux_loss_coeff = m.real("aux_loss_coeff", true, 1e6);
    c.moe.z_loss_coeff = m.real("z_loss_coeff", true, 1e6);
    c.moe.router_bias_update = m.real("router_bias_update", true, 1e6);
    c.moe.capacity_factor = m.real("capacity_factor", true, 1e6);
  }
  try {
    c.validate();
  } catch (const std::exception& e) {
    f.fail("", e.what());
  }
  return c;
}

std::string describe_model_difference(const ModelConfig& a, const ModelConfig& b) {
  // init_std only shapes step 0; a resumed run may change it without harm.
  nlohmann::json ja = model_config_to_json(a), jb = model_config_to_json(b);
  std::string diff;
  for (auto& [key, value] : ja.items()) {
    if (key == "init_std" || value == jb[key]) continue;
    diff += fmt::format("{}{} {} vs {}", diff.empty() ? "" : ", ", key, value.dump(),
                        jb[key].dump());
  }
  for (auto& [key, value] : jb.items())  // a section only b has (moe)
    if (!ja.contains(key)) diff += fmt::format("{}{} null vs {}", diff.empty() ? "" : ", ", key, value.dump());
  return diff;
}

namespace {
std::vector<DataFolderRecord> data_shards_from_meta(const MetaFields& meta, const std::string& source) {
  const nlohmann::json& j = meta.at("data_shards");
  if (!j.is_array() || j.empty()) meta.fail("data_shards", "is not a non-empty array");
  std::vector<DataFolderRecord> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const MetaFields f(j[i], source, fmt::format("data_shards[{}]", i));
    DataFolderRecord r{f.text("dir"), f.real("weight", false, 1.0), {}};
    const nlohmann::json& shards = f.at("shards");
    if (!shards.is_array()) f.fail("shards", "is not an array");
    for (size_t k = 0; k < shards.size(); ++k) {
      const MetaFields c(shards[k], source, fmt::format("data_shards[{}].shards[{}]", i, k));
      r.shards.push_back({c.text("split"), c.text("file"),
                          c.unsigned_integer("checksum", std::numeric_limits<uint64_t>::max())});
    }
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

CheckpointState checkpoint_state_from_meta(const nlohmann::json& meta, const std::string& path) {
  const std::string source = fmt::format("checkpoint '{}'", path);
  if (!meta.is_object() || !meta.contains("format") || meta["format"] != "fivefold-train-checkpoint")
    throw std::runtime_error(fmt::format(
        "'{}' is not a fivefold training checkpoint (its meta has no format "
        "\"fivefold-train-checkpoint\"); pass a run folder or step_N folder that fivefold train wrote",
        path));
  const MetaFields f(meta, source, "");
  CheckpointState s;
  s.model = model_config_from_json(f.at("model"), source);
  s.step = int(f.integer("step", 0, kMaxCheckpointStep));
  s.data.epoch = f.unsigned_integer("data_epoch", kMaxDataEpoch - 1);
  // A cursor indexes windows of seq_len tokens, so it is below the token count; 2^39 windows is
  // also where the shuffle's per-epoch counter range ends.
  s.data.cursor = f.unsigned_integer("data_cursor", (1ull << 39) - 1);
  const uint64_t expected = ParamLayout(s.model).total();
  if (f.unsigned_integer("num_params", std::numeric_limits<uint64_t>::max()) != expected)
    f.fail("num_params", fmt::format("is {} but the model it describes has {} parameters",
                                     f.at("num_params").dump(), expected));
  s.config_toml = meta.contains("config") ? f.text("config") : "";
  if (meta.contains("tokenizer_checksum"))
    s.tokenizer_checksum = f.unsigned_integer("tokenizer_checksum", std::numeric_limits<uint64_t>::max());
  if (meta.contains("router_bias")) {
    const nlohmann::json& b = f.at("router_bias");
    const size_t want = size_t(s.model.n_layers) * size_t(s.model.moe.n_experts);
    if (!b.is_array() || b.size() != want) f.fail("router_bias", fmt::format("is not an array of {} numbers", want));
    for (const auto& x : b) {
      if (!x.is_number() || !std::isfinite(x.get<double>())) f.fail("router_bias", "holds a value that is not a finite number");
      s.router_bias.push_back(x.get<float>());
    }
  }
  if (meta.contains("weights_only")) s.weights_only = f.boolean("weights_only");
  if (meta.contains("loss_scale")) {
    const MetaFields ls(f.at("loss_scale"), source, "loss_scale.");
    s.loss_scale = LossScaleState{ls.real("scale", false, 3.4e38), int(ls.integer("clean_steps", 0, 1'000'000'000)),
                                  int(ls.integer("hysteresis_left", -1'000'000'000, 1'000'000'000))};
  }
  if (meta.contains("lr_schedule_steps"))
    s.lr_schedule_steps = int(f.integer("lr_schedule_steps", 1, kMaxCheckpointStep));
  if (meta.contains("data_shards")) s.data_shards = data_shards_from_meta(f, source);
  return s;
}

}  // namespace ff
