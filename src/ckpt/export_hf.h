#pragma once
// Writes a Hugging Face LlamaForCausalLM folder: model.safetensors (HF tensor names, fp32, or
// bf16 rounded to nearest even from the fp32 master weights: `export --dtype bf16`),
// config.json, and the run's tokenizer file (tokenizer.model or tokenizer.json) with its config,
// so `from_pretrained(dir)` loads it. bos_id/eos_id -1: the tokenizer has none (written as null).
#include <string>

#include "core/dtype.h"
#include "model/model_config.h"
#include "model/parameters.h"

namespace ff {

void export_hugging_face(const std::string& out_dir, const ModelConfig& c,
                         const ParamLayout& layout, const float* params,
                         const std::string& tokenizer_file, int bos_id, int eos_id, DType dtype = DType::f32);
// "fp32" | "bf16" (export's --dtype); anything else throws naming the option.
DType parse_export_dtype(const std::string& s);

}  // namespace ff
