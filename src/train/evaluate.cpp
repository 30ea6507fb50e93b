#include "train/evaluate.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/cross_entropy.h"

namespace ff {

EvalResult evaluate_stream(Llama& model, const float* params, const TokenStream& tokens, int batch,
                           int64_t max_windows) {
  const int T = model.config().seq_len;
  int64_t windows = (int64_t(tokens.size()) - 1) / T;
  if (windows < 1)
    throw std::runtime_error(fmt::format(
        "evaluation needs at least seq_len + 1 = {} tokens, the shard has {}", T + 1, tokens.size()));
  if (max_windows > 0) windows = std::min(windows, max_windows);
  const int vocab = model.config().vocab_size;
  const bool masked = tokens.has_loss_mask();
  std::vector<int32_t> in(size_t(batch) * T), tgt(size_t(batch) * T), window(size_t(T) + 1);
  std::vector<uint8_t> mask(masked ? size_t(T) + 1 : 0);
  double sum = 0;
  int64_t targets = 0;
  for (int64_t w0 = 0; w0 < windows; w0 += batch) {
    const int B = int(std::min<int64_t>(batch, windows - w0));
    for (int b = 0; b < B; ++b) {
      const uint64_t start = uint64_t(w0 + b) * uint64_t(T);
      tokens.read(start, window.size(), window.data(), masked ? mask.data() : nullptr);
      // An id past the vocabulary would index past the embedding and the logits: refuse, never read.
      for (int t = 0; t <= T; ++t)
        if (window[size_t(t)] < 0 || window[size_t(t)] >= vocab)
          throw std::runtime_error(fmt::format(
              "evaluation: token id {} at position {} is outside the model's vocabulary of {}; evaluate "
              "on shards prepared with the model's tokenizer",
              window[size_t(t)], start + uint64_t(t), vocab));
      for (int t = 0; t < T; ++t) {
        const bool target = !masked || mask[size_t(t) + 1];
        in[size_t(b) * T + size_t(t)] = window[size_t(t)];
        tgt[size_t(b) * T + size_t(t)] = target ? window[size_t(t) + 1] : kIgnoredTarget;
        targets += target;
      }
    }
    sum += model.forward_loss(params, in.data(), tgt.data(), B, T);
  }
  if (targets == 0)
    throw std::runtime_error(fmt::format(
        "evaluation: the shard's loss mask leaves out every target of the {} windows evaluated; evaluate on "
        "data with completion tokens, or raise --max-windows",
        windows));
  return {sum / double(targets), targets};
}

}  // namespace ff
