#include "ckpt/import_hf.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ckpt/checkpoint_state.h"
#include "ckpt/safetensors.h"
#include "ckpt/saver.h"
#include "core/dtype.h"
#include "io/tokenizer/tokenizer.h"
#include "model/parameters.h"

namespace ff {

namespace fs = std::filesystem;

ModelConfig model_config_from_hf(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("'" + path + "' does not exist: an HF LLaMA folder holds config.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "' is not JSON: " + e.what());
  }
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw std::runtime_error(fmt::format("'{}' lacks '{}'", path, key));
    return j[key];
  };
  if (j.value("attention_bias", false) || j.value("mlp_bias", false))
    throw std::runtime_error("'" + path + "': attention_bias / mlp_bias: fivefold's LLaMA has no biases");
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    throw std::runtime_error("'" + path + "': hidden_act must be silu (SwiGLU)");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw std::runtime_error("'" + path + "': rope_scaling is not supported");
  nlohmann::json mine = {{"vocab_size", need("vocab_size")}, {"dim", need("hidden_size")},
                         {"n_layers", need("num_hidden_layers")}, {"n_heads", need("num_attention_heads")},
                         {"n_kv_heads", j.value("num_key_value_heads", need("num_attention_heads").get<int>())},
                         {"ffn_dim", need("intermediate_size")}, {"seq_len", need("max_position_embeddings")},
                         {"rms_eps", j.value("rms_norm_eps", 1e-5)}, {"rope_theta", j.value("rope_theta", 10000.0)},
                         {"tied_embeddings", j.value("tie_word_embeddings", false)}, {"init_std", 0.02}};
  return model_config_from_json(mine, path);
}

namespace {
// Which safetensors file holds each tensor: the index's weight_map, or the single file.
std::map<std::string, std::string> tensor_files(const fs::path& dir) {
  std::map<std::string, std::string> where;
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream f(index);
    const nlohmann::json j = nlohmann::json::parse(f);
    for (const auto& e : j.at("weight_map").items()) where[e.key()] = (dir / e.value().get<std::string>()).string();
    return where;
  }
  const fs::path single = dir / "model.safetensors";
  if (!fs::exists(single))
    throw std::runtime_error("'" + dir.string() + "' has neither model.safetensors nor model.safetensors.index.json");
  const nlohmann::json header = read_safetensors_header(single.string());
  for (const auto& e : header.items())
    if (e.key() != "__metadata__") where[e.key()] = single.string();
  return where;
}

void read_tensor(const std::string& file, const ParamView& v, float* dst) {
  const nlohmann::json h = read_safetensors_header(file);
  const nlohmann::json& t = h.at(v.name);
  const std::vector<int64_t> shape = t.at("shape").get<std::vector<int64_t>>();
  if (shape != v.shape)
    throw std::runtime_error(fmt::format("'{}': tensor {} has shape {} but the config makes it {}", file, v.name,
                                         nlohmann::json(shape).dump(), nlohmann::json(v.shape).dump()));
  const std::string dtype = t.at("dtype").get<std::string>();
  const size_t elem = dtype == "F32" ? 4 : dtype == "BF16" || dtype == "F16" ? 2 : 0;
  if (elem == 0) throw std::runtime_error(fmt::format("'{}': tensor {} is {}; import reads F32, BF16, F16", file, v.name, dtype));
  const uint64_t begin = t.at("data_offsets")[0].get<uint64_t>();
  std::ifstream f(file, std::ios::binary);
  f.seekg(std::streamoff(safetensors_data_start(file) + begin));
  std::vector<char> raw(v.numel * elem);
  f.read(raw.data(), std::streamsize(raw.size()));
  if (!f) throw std::runtime_error(fmt::format("'{}': tensor {} is cut short", file, v.name));
  if (elem == 4) return void(std::memcpy(dst, raw.data(), raw.size()));
  for (size_t i = 0; i < v.numel; ++i) {
    uint16_t x;
    std::memcpy(&x, raw.data() + 2 * i, 2);
    dst[i] = dtype == "BF16" ? bf16_to_f32(x) : f16_to_f32(x);
  }
}
}  // namespace

size_t import_hugging_face(const std::string& hf_dir, const std::string& out_dir) {
  const fs::path dir(hf_dir);
  const ModelConfig c = model_config_from_hf((dir / "config.json").string());
  // Folders that ship both (Llama 2) encode alike with either; the SentencePiece model is kept
  // as before, tokenizer.json serves the folders that have only it (Llama 3, Qwen2.5, SmolLM2).
  fs::path tok = dir / "tokenizer.model";
  if (!fs::exists(tok)) tok = dir / "tokenizer.json";
  if (!fs::exists(tok))
    throw std::runtime_error("'" + hf_dir + "' has neither tokenizer.model (SentencePiece) nor tokenizer.json to "
                             "train with; copy the model's tokenizer file into the folder");
  const std::unique_ptr<TextTokenizer> tokenizer = open_tokenizer(tok.string());
  const ParamLayout layout(c);
  const auto where = tensor_files(dir);
  std::vector<float> params(layout.total()), zeros(layout.total(), 0.0f);
  for (const ParamView& v : layout.views()) {
    const auto it = where.find(v.name);
    if (it == where.end()) throw std::runtime_error(fmt::format("'{}' lacks the tensor {}", hf_dir, v.name));
    read_tensor(it->second, v, params.data() + v.offset);
  }
  fs::create_directories(out_dir);
  CheckpointState s;
  s.model = c;
  s.tokenizer_checksum = tokenizer->checksum();
  // A step-0 checkpoint of one serial rank: the moments are zero, as a fresh AdamW's are.
  save_serial_checkpoint(out_dir, s, params.data(), zeros.data(), zeros.data());
  fs::copy_file(tok, fs::path(out_dir) / tok.filename(), fs::copy_options::overwrite_existing);
  return params.size();
}

}  // namespace ff
