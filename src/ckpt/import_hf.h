#pragma once
// `fivefold import --hf DIR --out RUN`: a Hugging Face model folder (config.json of a family
// hf_config.h accepts, model.safetensors or shards listed by model.safetensors.index.json, and
// its tokenizer files) into a run folder whose checkpoint is weights-only at step 0, ready to
// fine-tune with a fresh optimizer.
//
// Streamed: every header and the config are checked first, then each tensor's byte range is read
// (positioned reads) one bounded chunk at a time, widened to f32 and written to the checkpoint
// before the next is read, so the whole model is never in memory.
#include <cstddef>
#include <string>

#include "ckpt/hf_config.h"

namespace ff {

struct ImportOptions {
  // The most elements read and written at once (4M: 16 MiB of f32 plus the 16-bit source bytes).
  size_t chunk_elements = size_t(4) << 20;
};

struct ImportResult {
  HfModel hf;
  size_t params = 0;
  std::string tokenizer_file;  // the name copied into the run folder
};

// Writes OUT/step_0/ (weights only) and the tokenizer files (tokenizer.json, else tokenizer.model,
// with tokenizer_config.json and special_tokens_map.json, byte for byte). F32, BF16 and F16
// tensors convert exactly. Refuses, naming the file and tensor, a tensor missing, unknown, of
// another shape or dtype, and a tokenizer with more tokens than the model's vocab_size.
ImportResult import_hugging_face(const std::string& hf_dir, const std::string& out_dir,
                                 const ImportOptions& opt = {});

}  // namespace ff
