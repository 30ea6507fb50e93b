#include "train/evaluate.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

EvalResult evaluate_stream(Llama& model, const float* params, const std::vector<int32_t>& tokens,
                           int batch, int64_t max_windows) {
  const int T = model.config().seq_len;
  int64_t windows = (int64_t(tokens.size()) - 1) / T;
  if (windows < 1)
    throw std::runtime_error(fmt::format(
        "evaluation needs at least seq_len + 1 = {} tokens, the shard has {}", T + 1, tokens.size()));
  if (max_windows > 0) windows = std::min(windows, max_windows);
  // An id past the vocabulary would index past the embedding and the logits: refuse, never read.
  const int vocab = model.config().vocab_size;
  for (size_t i = 0; i < size_t(windows * T + 1); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      throw std::runtime_error(fmt::format(
          "evaluation: token id {} at position {} is outside the model's vocabulary of {}; evaluate "
          "on shards prepared with the model's tokenizer",
          tokens[i], i, vocab));
  std::vector<int32_t> in(size_t(batch) * T), tgt(size_t(batch) * T);
  double sum = 0;
  for (int64_t w0 = 0; w0 < windows; w0 += batch) {
    const int B = int(std::min<int64_t>(batch, windows - w0));
    for (int b = 0; b < B; ++b) {
      const int32_t* src = tokens.data() + (w0 + b) * T;
      std::copy(src, src + T, in.data() + size_t(b) * T);
      std::copy(src + 1, src + T + 1, tgt.data() + size_t(b) * T);
    }
    sum += model.forward_loss(params, in.data(), tgt.data(), B, T);
  }
  return {sum / (double(windows) * T), windows * T};
}

}  // namespace ff
