#pragma once
// A Hugging Face config.json and fivefold's ModelConfig, both ways, for the families whose
// computation fivefold's LLaMA reproduces exactly:
//   llama    Llama 2, TinyLlama, Llama 3.x (rope_scaling llama3 or linear), SmolLM/SmolLM2
//   mistral  as llama, without a sliding window
//   qwen2    Qwen2 / Qwen2.5: q, k and v projections with a bias
// Anything else is refused before a tensor is read, naming the file, the key, its value and what
// is supported: a config that imported but computed something else would fine-tune silently wrong.
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "model/model_config.h"

namespace ff {

// Training's seq_len when the model serves a longer context (Llama 3.2: 131072): the user picks
// the window to fine-tune on; max_position_embeddings is kept as the model's context.
constexpr int kImportSeqLenCap = 2048;

struct HfModel {
  std::string family;  // the config's model_type: "llama", "mistral" or "qwen2"
  ModelConfig model;
  int max_position_embeddings = 0;  // as the config gives it
};

// Reads and checks path (a config.json); throws on anything unsupported.
HfModel model_config_from_hf_file(const std::string& path);
// The same over parsed JSON; path names the file in messages.
HfModel model_config_from_hf(const nlohmann::json& j, const std::string& path);

// config.json in the family's own form: Qwen2ForCausalLM for a qkv_bias model, else
// LlamaForCausalLM (MixtralForCausalLM for MoE, which export_hf checks it can describe).
// bos_id / eos_id -1: none (null).
nlohmann::ordered_json hf_config_json(const ModelConfig& c, int bos_id, int eos_id, DType dtype);

}  // namespace ff
