#include "ckpt/hf_config.h"

#include <fstream>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "ckpt/checkpoint_state.h"

namespace ff {

namespace {

const char* const kFamilies = "llama (Llama 2, TinyLlama, Llama 3.x, SmolLM2), mistral, qwen2 (Qwen2, Qwen2.5)";

// One config.json's keys read with the file named in every refusal.
class HfKeys {
 public:
  // prefix: the object's own key ("rope_scaling."), for keys inside it.
  HfKeys(const nlohmann::json& j, std::string path, std::string prefix = "")
      : j_(j), path_(std::move(path)), prefix_(std::move(prefix)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const nlohmann::json& at(const char* key) const { return j_.at(key); }
  [[noreturn]] void refuse(const std::string& key, const nlohmann::json& value, const std::string& supported) const {
    throw std::runtime_error(fmt::format("'{}': key '{}{}' is {}; fivefold supports {}", path_, prefix_, key,
                                         value.dump(), supported));
  }
  [[noreturn]] void missing(const std::string& key, const std::string& what) const {
    throw std::runtime_error(fmt::format("'{}' lacks '{}{}' ({}); a Hugging Face config.json of {} sets it", path_,
                                         prefix_, key, what, kFamilies));
  }
  int64_t integer(const char* key, const char* what) const {
    if (!has(key)) missing(key, what);
    if (!at(key).is_number_integer() || at(key).get<int64_t>() < 1) refuse(key, at(key), std::string("a positive integer: ") + what);
    const int64_t v = at(key).get<int64_t>();
    if (v > std::numeric_limits<int>::max()) refuse(key, at(key), std::string("a value below 2^31: ") + what);
    return v;
  }
  int64_t integer_or(const char* key, int64_t fallback, const char* what) const {
    return has(key) ? integer(key, what) : fallback;
  }
  double number_or(const char* key, double fallback, const char* what) const {
    if (!has(key)) return fallback;
    if (!at(key).is_number() || !(at(key).get<double>() > 0)) refuse(key, at(key), std::string("a positive number: ") + what);
    return at(key).get<double>();
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!at(key).is_boolean()) refuse(key, at(key), "true or false");
    return at(key).get<bool>();
  }
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::string prefix_;
};

// rope_scaling: null, or {"rope_type" (older files: "type"): "llama3" | "linear" | "default", ...}.
RopeScaling rope_scaling_from_hf(const HfKeys& k) {
  RopeScaling r;
  if (!k.has("rope_scaling")) return r;
  const nlohmann::json& s = k.at("rope_scaling");
  const char* supported = "rope_scaling null, or rope_type \"llama3\" (factor, low_freq_factor, high_freq_factor, "
                          "original_max_position_embeddings) or \"linear\" (factor)";
  if (!s.is_object()) k.refuse("rope_scaling", s, supported);
  const char* type_key = s.contains("rope_type") ? "rope_type" : "type";
  if (!s.contains(type_key)) k.refuse("rope_scaling", s, supported);
  const nlohmann::json& type = s.at(type_key);
  const std::string key = std::string("rope_scaling.") + type_key;
  if (type == "default") return r;
  if (type == "linear") r.kind = RopeScalingKind::linear;
  else if (type == "llama3") r.kind = RopeScalingKind::llama3;
  else k.refuse(key, type, supported);
  const HfKeys f(s, k.path(), "rope_scaling.");
  auto need = [&](const char* field) {
    if (!f.has(field)) k.refuse("rope_scaling", s, fmt::format("{}: its '{}' is missing", supported, field));
    return field;
  };
  r.factor = float(f.number_or(need("factor"), 1.0, "the scaling factor"));
  if (r.kind == RopeScalingKind::llama3) {
    r.low_freq_factor = float(f.number_or(need("low_freq_factor"), 1.0, "llama3's low_freq_factor"));
    r.high_freq_factor = float(f.number_or(need("high_freq_factor"), 4.0, "llama3's high_freq_factor"));
    r.original_context = int(f.integer(need("original_max_position_embeddings"), "llama3's original context"));
  }
  return r;
}

}  // namespace

HfModel model_config_from_hf(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw std::runtime_error(fmt::format("'{}' is not a JSON object", path));
  const HfKeys k(j, path);
  if (!k.has("model_type")) k.missing("model_type", std::string("the architecture: ") + kFamilies);
  const nlohmann::json& type = k.at("model_type");
  if (type != "llama" && type != "mistral" && type != "qwen2") k.refuse("model_type", type, kFamilies);
  HfModel out;
  out.family = type.get<std::string>();
  const bool qwen2 = out.family == "qwen2", mistral = out.family == "mistral";
  // Before anything else: each is a different computation than fivefold's.
  if (k.has("quantization_config"))
    k.refuse("quantization_config", k.at("quantization_config"),
             "unquantised F32, BF16 or F16 tensors (dequantise the model first)");
  if (k.has("hidden_act") && k.at("hidden_act") != "silu") k.refuse("hidden_act", k.at("hidden_act"), "\"silu\" (SwiGLU)");
  if (k.boolean_or("attention_bias", false))
    k.refuse("attention_bias", true, qwen2 ? "attention_bias false (Qwen2's q/k/v biases need no key)"
                                           : "attention_bias false: fivefold's attention has biases only on q, k "
                                             "and v, and only in qwen2 models");
  if (k.boolean_or("mlp_bias", false)) k.refuse("mlp_bias", true, "mlp_bias false (fivefold's MLP has no biases)");
  const int64_t max_pos = k.integer("max_position_embeddings", "the model's context");
  if (mistral) {
    // MistralConfig's own default window is 4096.
    const nlohmann::json window = j.contains("sliding_window") ? j.at("sliding_window") : nlohmann::json(4096);
    if (!window.is_null() && (!window.is_number_integer() || window.get<int64_t>() < max_pos))
      k.refuse("sliding_window", window,
               fmt::format("sliding_window null (or >= max_position_embeddings = {}): full causal attention",
                           max_pos));
  }
  if (qwen2 && k.boolean_or("use_sliding_window", false))
    k.refuse("use_sliding_window", true, "use_sliding_window false: full causal attention");
  const RopeScaling scaling = rope_scaling_from_hf(k);

  const int64_t heads = k.integer("num_attention_heads", "query heads");
  // The family's config class default when absent: Llama's is the head count, Mistral's 8, Qwen2's 32.
  const int64_t kv_default = mistral ? 8 : qwen2 ? 32 : heads;
  const int64_t hidden = k.integer("hidden_size", "the residual width");
  ModelConfig c;
  c.vocab_size = int(k.integer("vocab_size", "the embedding's rows"));
  c.dim = int(hidden);
  c.n_layers = int(k.integer("num_hidden_layers", "decoder blocks"));
  c.n_heads = int(heads);
  c.n_kv_heads = int(k.integer_or("num_key_value_heads", kv_default, "key/value heads"));
  c.ffn_dim = int(k.integer("intermediate_size", "the SwiGLU width"));
  c.seq_len = int(std::min<int64_t>(max_pos, kImportSeqLenCap));
  // Kept only when it differs from seq_len, so a model whose context is the window reads as before.
  c.max_positions = max_pos > c.seq_len ? int(max_pos) : 0;
  c.rms_eps = float(k.number_or("rms_norm_eps", 1e-6, "the RMSNorm epsilon"));
  c.rope_theta = float(k.number_or("rope_theta", 10000.0, "RoPE's base"));
  c.rope_scaling = scaling;
  c.tied_embeddings = k.boolean_or("tie_word_embeddings", false);
  c.init_std = float(k.number_or("initializer_range", 0.02, "the init std"));
  c.qkv_bias = qwen2;
  // Stored only when it differs from hidden_size / heads, so an ordinary model's metadata is unchanged.
  const int64_t head_dim = k.integer_or("head_dim", 0, "the per-head width");
  if (head_dim > 0 && (hidden % heads != 0 || head_dim != hidden / heads)) c.head_size = int(head_dim);
  // Through the checkpoint's own reader: the same ranges and consistency checks as a saved model.
  out.model = model_config_from_json(model_config_to_json(c), "'" + path + "'");
  out.max_position_embeddings = int(max_pos);
  return out;
}

HfModel model_config_from_hf_file(const std::string& path) {
  std::ifstream f(path);
  if (!f)
    throw std::runtime_error(fmt::format("'{}' does not exist: a Hugging Face model folder holds config.json "
                                         "beside its safetensors",
                                         path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("'{}' is not JSON: {}", path, e.what()));
  }
  return model_config_from_hf(j, path);
}

namespace {

// A float as the shortest decimal that reads back to it (1e-05, not 9.999999747378752e-06), so
// the exported config.json shows the numbers the original showed and reads back to the same float.
double shortest(float x) { return std::stod(fmt::format("{}", x)); }

nlohmann::ordered_json rope_scaling_to_hf(const RopeScaling& r) {
  if (r.kind == RopeScalingKind::none) return nullptr;
  nlohmann::ordered_json s = {{"rope_type", rope_scaling_names().name(r.kind)}, {"factor", shortest(r.factor)}};
  if (r.kind == RopeScalingKind::llama3) {
    s["low_freq_factor"] = shortest(r.low_freq_factor);
    s["high_freq_factor"] = shortest(r.high_freq_factor);
    s["original_max_position_embeddings"] = r.original_context;
  }
  return s;
}

}  // namespace

nlohmann::ordered_json hf_config_json(const ModelConfig& c, int bos_id, int eos_id, DType dtype) {
  const bool qwen2 = c.qkv_bias, moe = c.moe.enabled();
  nlohmann::ordered_json j;
  j["architectures"] = {moe ? "MixtralForCausalLM" : qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = moe ? "mixtral" : qwen2 ? "qwen2" : "llama";
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.ffn_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  // Always, as Llama 3.x and SmolLM2 configs write it: the config then states the attention width
  // whether or not it is hidden_size / heads.
  j["head_dim"] = c.head_dim();
  j["max_position_embeddings"] = c.context_length();
  j["rms_norm_eps"] = shortest(c.rms_eps);
  j["rope_theta"] = shortest(c.rope_theta);
  j["rope_scaling"] = rope_scaling_to_hf(c.rope_scaling);
  j["vocab_size"] = c.vocab_size;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["initializer_range"] = shortest(c.init_std);
  if (qwen2) {
    // Qwen2's q/k/v biases are part of its architecture; its window is off in every layer. The
    // window's size is written as Qwen2.5's own configs write it (the context) rather than null:
    // transformers ignores it while use_sliding_window is false, and stricter readers of the
    // config (text-embeddings-inference) require a number.
    j["use_sliding_window"] = false;
    j["sliding_window"] = c.context_length();
    j["max_window_layers"] = c.n_layers;
  } else if (!moe) {
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
  }
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = bos_id >= 0 ? nlohmann::ordered_json(bos_id) : nlohmann::ordered_json();
  j["eos_token_id"] = eos_id >= 0 ? nlohmann::ordered_json(eos_id) : nlohmann::ordered_json();
  j["torch_dtype"] = dtype == DType::bf16 ? "bfloat16" : "float32";
  if (moe) {
    const MoeConfig& m = c.moe;
    j["intermediate_size"] = m.expert_width(c.ffn_dim);
    j["num_local_experts"] = m.n_experts;
    j["num_experts_per_tok"] = m.top_k;
    j["router_aux_loss_coef"] = m.aux_loss_coeff;
    j["output_router_logits"] = false;
  }
  return j;
}

}  // namespace ff
