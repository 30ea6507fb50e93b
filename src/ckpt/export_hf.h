#pragma once
// Writes a Hugging Face folder that `from_pretrained(dir)` loads: the weights (HF tensor names,
// fp32, or bf16 rounded to nearest even from the fp32 master weights: `export --dtype bf16`) as
// model.safetensors, or, above max_shard_bytes, as model-0000i-of-0000N.safetensors shards with
// model.safetensors.index.json; config.json in the family's form (hf_config.h); and the run's
// tokenizer files byte for byte (tokenizer.json or tokenizer.model with tokenizer_config.json and
// special_tokens_map.json), a tokenizer_config.json generated only when the run has none.
// bos_id/eos_id -1: the tokenizer has none (written as null).
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "model/model_config.h"
#include "model/parameters.h"

namespace ff {

// transformers' own default shard size is larger; 2 GiB keeps each shard well inside what one
// process maps comfortably and matches the sizes the small models ship in.
constexpr uint64_t kExportShardBytes = uint64_t(2) << 30;

// Beyond params, at most one shard's tensors are held (bf16: the shard's rounded copy; fp32
// writes straight from params).
void export_hugging_face(const std::string& out_dir, const ModelConfig& c, const ParamLayout& layout,
                         const float* params, const std::string& tokenizer_file, int bos_id, int eos_id,
                         DType dtype = DType::f32, uint64_t max_shard_bytes = kExportShardBytes);
// "fp32" | "bf16" (export's --dtype); anything else throws naming the option.
DType parse_export_dtype(const std::string& s);

}  // namespace ff
