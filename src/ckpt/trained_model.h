#pragma once
// A trained model loaded for use (sample, eval, export): the checkpoint's weights, a model built
// to its config, and the tokenizer saved beside it, checked to agree with each other.
#include <memory>
#include <string>

#include "ckpt/checkpoint_state.h"
#include "core/memory.h"
#include "io/tokenizer/tokenizer.h"
#include "model/llama.h"

namespace ff {

struct TrainedModel {
  CheckpointState state;
  std::string checkpoint_path;  // the step_N folder
  std::string tokenizer_path;
  std::unique_ptr<TextTokenizer> tokenizer;
  std::unique_ptr<Llama> model;
  TrackedBuffer<float> params;
  uint64_t bytes_read = 0;  // from the checkpoint's data files: the parameters' blocks, no moments
};

// dir: a run folder (its newest complete step_N checkpoint, and its tokenizer.json or
// tokenizer.model) or one of its
// step_N folders. Reads the parameters only. Throws when either is missing or they disagree.
TrainedModel load_trained_model(const std::string& dir_or_file, int max_batch);

}  // namespace ff
