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

GeneratedIds generate_ids(Llama& model, const float* params, const TextTokenizer& tok,
                          const std::string& prompt, const SampleOptions& opt,
                          const std::function<void(int32_t)>& on_token) {
  // Only the tokenizer's ids are candidates: a model may pad its vocabulary past the tokenizer's
  // (Qwen2.5), and a padding row's logit is never a token to emit.
  const int V = std::min(model.config().vocab_size, tok.vocab_size()), T = model.config().seq_len;
  GeneratedIds g;
  // The prompt opens a document, as the training data's documents were opened.
  g.prefix = tok.document_prefix();
  g.prompt = tok.encode(prompt);
  std::vector<int32_t> ids = g.prefix;
  ids.insert(ids.end(), g.prompt.begin(), g.prompt.end());
  RngState rng{opt.seed, 0};
  for (int i = 0; i < opt.max_tokens; ++i) {
    const int ctx = std::min<int>(int(ids.size()), T);
    const float* logits = model.forward_last_logits(params, ids.data() + ids.size() - ctx, ctx);
    int32_t next = pick(logits, V, opt, rng);
    if (next == tok.eos_id()) break;
    ids.push_back(next);
    g.continuation.push_back(next);
    if (on_token) on_token(next);
  }
  return g;
}

std::string generate(Llama& model, const float* params, const TextTokenizer& tok,
                     const std::string& prompt, const SampleOptions& opt) {
  GeneratedIds g = generate_ids(model, params, tok, prompt, opt);
  // The document's opening tokens are not text (a tokenizer.json would print them).
  g.prompt.insert(g.prompt.end(), g.continuation.begin(), g.continuation.end());
  return tok.decode(g.prompt);
}

namespace {
// True when the text ends inside a UTF-8 character or in the replacement character a decoder puts
// for a partial one: the next id may complete it.
bool ends_unfinished(const std::string& s) {
  static const std::string replacement = "\xEF\xBF\xBD";
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, replacement) == 0) return true;
  // Walk back over continuation bytes to the lead byte and compare the length it announces.
  size_t i = s.size(), continuation = 0;
  while (i > 0 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80 && continuation < 4) --i, ++continuation;
  if (i == 0) return continuation > 0;
  const unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  const size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return continuation < need;
}
}  // namespace

void TextStream::trim() {
  // A few ids of context are enough to decode the next one as it reads in the whole text.
  constexpr size_t kContext = 4;
  if (anchor_.size() > kContext) anchor_.erase(anchor_.begin(), anchor_.end() - kContext);
}

std::string TextStream::push(int32_t id) {
  pending_.push_back(id);
  return take(false);
}

std::string TextStream::finish() { return pending_.empty() ? "" : take(true); }

std::string TextStream::take(bool force) {
  // Past this many held ids the decoder is not going to agree; print what it says.
  constexpr size_t kMaxHeld = 16;
  force = force || pending_.size() > kMaxHeld;
  const std::string before = tok_.decode(anchor_);
  std::vector<int32_t> both = anchor_;
  both.insert(both.end(), pending_.begin(), pending_.end());
  const std::string after = tok_.decode(both);
  const bool agrees = after.compare(0, before.size(), before) == 0;
  if (!force && (!agrees || ends_unfinished(after))) return "";
  anchor_ = std::move(both);
  pending_.clear();
  trim();
  return after.substr(std::min(before.size(), after.size()));
}

}  // namespace ff
