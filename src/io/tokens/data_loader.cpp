#include "io/tokens/data_loader.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/rng.h"
#include "io/tokens/window_permutation.h"

namespace ff {

namespace {

// Keeps the shuffle stream apart from other users of the same run seed (sampling, init).
constexpr uint64_t kShuffleSalt = 0xD1B54A32D192ED03ull;
// Each epoch's shuffle gets its own counter range; an epoch draws 2 counters per window, so
// ranges never overlap below 2^39 windows.
constexpr int kEpochCounterShift = 40;
constexpr uint64_t kNoEpoch = ~0ull;

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const std::vector<int32_t>> tokens, int seq_len, uint64_t seed)
    : DataLoader(tokens ? tokens_in_memory(*tokens) : nullptr, seq_len, seed) {}

DataLoader::DataLoader(std::shared_ptr<const TokenStream> tokens, int seq_len, uint64_t seed)
    : tokens_(std::move(tokens)), seq_len_(seq_len), seed_(seed) {
  if (!tokens_) {
    throw std::runtime_error(
        "DataLoader: no token stream given; open the shards with "
        "open_token_shards first");
  }
  if (seq_len_ <= 0) {
    throw std::runtime_error("DataLoader: seq_len must be positive, got " +
                             std::to_string(seq_len_) + "; set a positive sequence length");
  }
  const uint64_t n = tokens_->size();
  if (n < uint64_t(seq_len_) + 1) {
    throw std::runtime_error("DataLoader: the token stream has " + std::to_string(n) +
                             " tokens but one window of seq_len " + std::to_string(seq_len_) +
                             " needs at least " + std::to_string(size_t(seq_len_) + 1) +
                             "; use more text or a shorter sequence length");
  }
  windows_ = size_t((n - 1) / uint64_t(seq_len_));
  window_.resize(size_t(seq_len_) + 1);
  if (tokens_->has_loss_mask()) window_mask_.resize(size_t(seq_len_) + 1);
}

const std::vector<uint64_t>& DataLoader::order(uint64_t epoch) {
  for (auto& c : cache_) {
    if (c.epoch == epoch && epoch != kNoEpoch) return c.windows;
  }
  // Fill an empty slot, else evict the older epoch: training walks forward, so the newer one is
  // the one still needed.
  const bool evict0 = cache_[0].epoch == kNoEpoch ||
                      (cache_[1].epoch != kNoEpoch && cache_[0].epoch < cache_[1].epoch);
  CachedOrder& slot = evict0 ? cache_[0] : cache_[1];
  slot.epoch = epoch;
  slot.windows.resize(windows_);
  for (size_t i = 0; i < windows_; ++i) slot.windows[i] = i;
  RngState rng{seed_ ^ kShuffleSalt, epoch << kEpochCounterShift};
  for (size_t i = windows_ - 1; i > 0; --i) {
    std::swap(slot.windows[i], slot.windows[rng.next_below(i + 1)]);
  }
  return slot.windows;
}

uint64_t DataLoader::window_at(uint64_t epoch, uint64_t slot) {
  if (windows_ > kMaxTabledWindows) return permute_index(slot, windows_, seed_ ^ kShuffleSalt, epoch);
  return order(epoch)[slot];
}

uint64_t DataLoader::read_sequence(uint64_t sequence, int32_t* in, int32_t* tgt) {
  const size_t T = size_t(seq_len_);
  const bool masked = tokens_->has_loss_mask();
  if (!in && !tgt && !masked) return T;
  uint8_t* mask = masked ? window_mask_.data() : nullptr;
  // Targets are inputs shifted by one, so a window reads seq_len + 1 tokens.
  const uint64_t start = window_at(sequence / windows_, sequence % windows_) * uint64_t(seq_len_);
  tokens_->read(start, T + 1, in || tgt ? window_.data() : nullptr, mask);
  uint64_t targets = T;
  if (masked) {
    targets = 0;
    for (size_t t = 1; t <= T; ++t) targets += mask[t];
  }
  if (in) std::copy(window_.begin(), window_.begin() + T, in);
  if (tgt)
    for (size_t t = 0; t < T; ++t) tgt[t] = masked && !mask[t + 1] ? -1 : window_[t + 1];
  return targets;
}

uint64_t DataLoader::next_batch(int n, int offset, int count, int32_t* inputs, int32_t* targets) {
  if (n <= 0 || offset < 0 || count < 0 || offset + int64_t(count) > n) {
    throw std::runtime_error("DataLoader::next_batch: rows [" + std::to_string(offset) + ", " +
                             std::to_string(int64_t(offset) + count) +
                             ") do not lie inside a global batch of " + std::to_string(n) +
                             "; each rank must read a slice of [0, n) with n > 0");
  }
  const size_t T = size_t(seq_len_);
  const uint64_t first = pos_.epoch * windows_ + pos_.cursor;
  uint64_t targets_in_batch = 0;
  for (int r = 0; r < n; ++r) {
    const bool mine = r >= offset && r < offset + count;
    const size_t at = size_t(r - offset) * T;
    targets_in_batch += read_sequence(first + uint64_t(r), mine ? inputs + at : nullptr, mine ? targets + at : nullptr);
  }
  const uint64_t end = pos_.cursor + uint64_t(n);
  pos_.epoch += end / windows_;
  pos_.cursor = end % windows_;
  return targets_in_batch;
}

void DataLoader::set_position(Position p) {
  if (p.cursor >= windows_) {
    throw std::runtime_error("DataLoader::set_position: cursor " + std::to_string(p.cursor) +
                             " is past the " + std::to_string(windows_) +
                             " windows of an epoch; the checkpoint was saved with a different "
                             "shard or seq_len, so resume with the same data settings");
  }
  pos_ = p;
}

}  // namespace ff
