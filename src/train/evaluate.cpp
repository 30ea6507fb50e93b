#include "train/evaluate.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "io/npy_writer.h"
#include "kernels/cross_entropy.h"

namespace ff {

namespace {
// The evaluation windows: window w is tokens [w*T, w*T + T], inputs the first T, targets shifted
// by one (kIgnoredTarget where a loss mask leaves a token out).
class EvalWindows {
 public:
  EvalWindows(const TokenStream& tokens, int T, int vocab, int batch, int64_t max_windows)
      : tokens_(tokens), T_(T), vocab_(vocab), masked_(tokens.has_loss_mask()), in_(size_t(batch) * T),
        tgt_(size_t(batch) * T), window_(size_t(T) + 1), mask_(masked_ ? size_t(T) + 1 : 0) {
    count_ = (int64_t(tokens.size()) - 1) / T;
    if (count_ < 1)
      throw std::runtime_error(fmt::format(
          "evaluation needs at least seq_len + 1 = {} tokens, the shard has {}", T + 1, tokens.size()));
    if (max_windows > 0) count_ = std::min(count_, max_windows);
  }
  int64_t count() const { return count_; }
  // Reads windows [w0, w0 + B) into inputs() and targets(); returns the loss targets among them.
  int64_t read(int64_t w0, int B) {
    int64_t targets = 0;
    for (int b = 0; b < B; ++b) {
      const uint64_t start = uint64_t(w0 + b) * uint64_t(T_);
      tokens_.read(start, window_.size(), window_.data(), masked_ ? mask_.data() : nullptr);
      // An id past the vocabulary would index past the embedding and the logits: refuse, never read.
      for (int t = 0; t <= T_; ++t)
        if (window_[size_t(t)] < 0 || window_[size_t(t)] >= vocab_)
          throw std::runtime_error(fmt::format(
              "evaluation: token id {} at position {} is outside the model's vocabulary of {}; evaluate "
              "on shards prepared with the model's tokenizer",
              window_[size_t(t)], start + uint64_t(t), vocab_));
      for (int t = 0; t < T_; ++t) {
        const bool target = !masked_ || mask_[size_t(t) + 1];
        in_[size_t(b) * T_ + size_t(t)] = window_[size_t(t)];
        tgt_[size_t(b) * T_ + size_t(t)] = target ? window_[size_t(t) + 1] : kIgnoredTarget;
        targets += target;
      }
    }
    return targets;
  }
  const int32_t* inputs() const { return in_.data(); }
  const int32_t* targets() const { return tgt_.data(); }

 private:
  const TokenStream& tokens_;
  int T_, vocab_;
  bool masked_;
  int64_t count_ = 0;
  std::vector<int32_t> in_, tgt_, window_;
  std::vector<uint8_t> mask_;
};
}  // namespace

EvalResult evaluate_stream(Llama& model, const float* params, const TokenStream& tokens, int batch,
                           int64_t max_windows) {
  const int T = model.config().seq_len;
  EvalWindows windows(tokens, T, model.config().vocab_size, batch, max_windows);
  double sum = 0;
  int64_t targets = 0;
  for (int64_t w0 = 0; w0 < windows.count(); w0 += batch) {
    const int B = int(std::min<int64_t>(batch, windows.count() - w0));
    targets += windows.read(w0, B);
    sum += model.forward_loss(params, windows.inputs(), windows.targets(), B, T);
  }
  if (targets == 0)
    throw std::runtime_error(fmt::format(
        "evaluation: the shard's loss mask leaves out every target of the {} windows evaluated; evaluate on "
        "data with completion tokens, or raise --max-windows",
        windows.count()));
  return {sum / double(targets), targets};
}

int64_t write_window_logits(Llama& model, const float* params, const TokenStream& tokens, int batch,
                            int64_t max_windows, const std::string& path) {
  const int T = model.config().seq_len, V = model.config().vocab_size;
  EvalWindows windows(tokens, T, V, batch, max_windows);
  NpyFloat32Writer out(path, {windows.count(), T, V});
  for (int64_t w0 = 0; w0 < windows.count(); w0 += batch) {
    const int B = int(std::min<int64_t>(batch, windows.count() - w0));
    windows.read(w0, B);
    out.append(model.forward_logits(params, windows.inputs(), B, T), size_t(B) * size_t(T) * size_t(V));
  }
  out.commit();
  return windows.count();
}

}  // namespace ff
