#pragma once
// Text generation from a trained model: temperature and top-k sampling with a seeded,
// counter-based RNG, so the same seed prints the same text.
#include <cstdint>
#include <string>

#include "io/tokenizer/tokenizer.h"
#include "model/llama.h"

namespace ff {

struct SampleOptions {
  int max_tokens = 200;
  float temperature = 0.8f;  // 0 = greedy
  int top_k = 40;            // 0 = whole vocabulary
  uint64_t seed = 1;
};

// Returns the prompt followed by the generated continuation. The context slides when it
// outgrows the model's seq_len.
std::string generate(Llama& model, const float* params, const TextTokenizer& tok,
                     const std::string& prompt, const SampleOptions& opt);

}  // namespace ff
