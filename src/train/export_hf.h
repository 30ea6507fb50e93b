#pragma once
// Writes a Hugging Face LlamaForCausalLM folder: model.safetensors (HF tensor names, fp32),
// config.json, and the SentencePiece tokenizer with its config, so `from_pretrained(dir)` loads it.
#include <string>

#include "model/model_config.h"
#include "model/parameters.h"

namespace ff {

void export_hugging_face(const std::string& out_dir, const ModelConfig& c,
                         const ParamLayout& layout, const float* params,
                         const std::string& tokenizer_model, int bos_id, int eos_id);

}  // namespace ff
