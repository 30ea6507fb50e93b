#pragma once
// Text generation from a trained model: temperature and top-k sampling with a seeded,
// counter-based RNG, so the same seed prints the same text.
#include <cstdint>
#include <string>
#include <vector>

#include "io/tokenizer/tokenizer.h"
#include "model/llama.h"

namespace ff {

struct SampleOptions {
  int max_tokens = 200;
  float temperature = 0.8f;  // 0 = greedy
  int top_k = 40;            // 0 = whole vocabulary
  uint64_t seed = 1;
};

// The ids fed and produced: the document's opening tokens and the prompt's, then the
// continuation (without the EOS that ended it, if one did).
struct GeneratedIds {
  std::vector<int32_t> prefix, prompt, continuation;
};

// Generates from the prompt. The context slides when it outgrows the model's seq_len.
GeneratedIds generate_ids(Llama& model, const float* params, const TextTokenizer& tok,
                          const std::string& prompt, const SampleOptions& opt);

// Returns the prompt followed by the generated continuation, as text.
std::string generate(Llama& model, const float* params, const TextTokenizer& tok,
                     const std::string& prompt, const SampleOptions& opt);

}  // namespace ff
