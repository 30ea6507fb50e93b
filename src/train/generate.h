#pragma once
// Text generation from a trained model: temperature and top-k sampling with a seeded,
// counter-based RNG, so the same seed prints the same text.
#include <cstdint>
#include <functional>
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
// on_token (optional) sees each generated id as soon as it is picked, so a caller can stream.
GeneratedIds generate_ids(Llama& model, const float* params, const TextTokenizer& tok,
                          const std::string& prompt, const SampleOptions& opt,
                          const std::function<void(int32_t)>& on_token = {});

// Turns ids arriving one at a time into text pieces whose concatenation is the text of all of
// them. A token alone may decode differently than after its neighbours (a SentencePiece word's
// leading space, half of a UTF-8 character), so each piece is decoded after a few ids already
// printed and held back while it ends in an incomplete character.
class TextStream {
 public:
  TextStream(const TextTokenizer& tok, std::vector<int32_t> printed) : tok_(tok), anchor_(std::move(printed)) { trim(); }
  // The text the id adds, possibly "" (held back until a later id completes it).
  std::string push(int32_t id);
  // What is still held back, at the end.
  std::string finish();

 private:
  void trim();
  std::string take(bool force);
  const TextTokenizer& tok_;
  std::vector<int32_t> anchor_, pending_;
};

// Returns the prompt followed by the generated continuation, as text.
std::string generate(Llama& model, const float* params, const TextTokenizer& tok,
                     const std::string& prompt, const SampleOptions& opt);

}  // namespace ff
