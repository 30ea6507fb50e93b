#pragma once
// `fivefold import --hf DIR --out RUN`: a Hugging Face LLaMA folder (config.json, model.safetensors
// or sharded safetensors with model.safetensors.index.json, tokenizer.model) into a run folder
// whose checkpoint is at step 0 with zero AdamW moments, ready to fine-tune.
#include <string>

#include "model/model_config.h"

namespace ff {

// The LlamaConfig keys fivefold knows; refuses what it cannot train (biases, scaling, other
// activations), naming the file and key.
ModelConfig model_config_from_hf(const std::string& config_json_path);

// Writes OUT/step_0/ (a sharded checkpoint of one serial rank) and OUT/tokenizer.model (or
// tokenizer.json when the folder has no .model); F32, BF16 and F16 tensors convert to f32
// (exactly: every 16-bit value is an f32 value). Returns the parameters read.
size_t import_hugging_face(const std::string& hf_dir, const std::string& out_dir);

}  // namespace ff
