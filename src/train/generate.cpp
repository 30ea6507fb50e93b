#include "train/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "core/rng.h"

namespace ff {

namespace {
int32_t pick(const float* logits, int V, const SampleOptions& opt, RngState& rng) {
  if (opt.temperature <= 0) return int32_t(std::max_element(logits, logits + V) - logits);
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  int k = opt.top_k > 0 ? std::min(opt.top_k, V) : V;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<double> p(static_cast<size_t>(k));
  const double top = logits[ids[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[i] = std::exp((logits[ids[i]] - top) / opt.temperature);
  double u = rng.next_uniform01() * sum;
  for (int i = 0; i < k; ++i) {
    u -= p[i];
    if (u <= 0) return ids[i];
  }
  return ids[k - 1];
}
}  // namespace

std::string generate(Llama& model, const float* params, const TextTokenizer& tok,
                     const std::string& prompt, const SampleOptions& opt) {
  // Only the tokenizer's ids are candidates: a model may pad its vocabulary past the tokenizer's
  // (Qwen2.5), and a padding row's logit is never a token to emit.
  const int V = std::min(model.config().vocab_size, tok.vocab_size()), T = model.config().seq_len;
  // The prompt opens a document, as the training data's documents were opened.
  const std::vector<int32_t> prefix = tok.document_prefix();
  std::vector<int32_t> ids = prefix;
  const std::vector<int32_t> prompt_ids = tok.encode(prompt);
  ids.insert(ids.end(), prompt_ids.begin(), prompt_ids.end());
  RngState rng{opt.seed, 0};
  for (int i = 0; i < opt.max_tokens; ++i) {
    const int ctx = std::min<int>(int(ids.size()), T);
    const float* logits = model.forward_last_logits(params, ids.data() + ids.size() - ctx, ctx);
    int32_t next = pick(logits, V, opt, rng);
    if (next == tok.eos_id()) break;
    ids.push_back(next);
  }
  // The document's opening tokens are not text (a tokenizer.json would print them).
  return tok.decode(std::vector<int32_t>(ids.begin() + std::ptrdiff_t(prefix.size()), ids.end()));
}

}  // namespace ff
