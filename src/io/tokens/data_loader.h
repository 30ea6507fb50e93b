#pragma once
// Deterministic batches of (input, target) windows over one token stream (token_stream.h).
//
// The stream is cut into non-overlapping windows of seq_len + 1 tokens (window i starts at
// i * seq_len, so neighbours share one token and targets are inputs shifted by one). Each epoch
// visits every window exactly once in an order drawn from (seed, epoch) alone (how: see
// kMaxTabledWindows), and a global batch is the next n windows of that order, continuing into the
// next epoch's order at the end. The
// whole state is Position, so a resumed run, or a data-parallel rank reading rows
// [offset, offset + count) of the same global batch, sees exactly the serial run's rows.
// A target the stream's loss mask leaves out is written as -1 (no loss, no gradient), and each
// batch reports how many targets its whole global batch has, so every rank divides by the same
// count however the rows are split.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "io/tokens/token_stream.h"

namespace ff {

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const TokenStream> tokens, int seq_len, uint64_t seed);
  // A stream held in memory, every token a target (tests and tools).
  DataLoader(std::shared_ptr<const std::vector<int32_t>> tokens, int seq_len, uint64_t seed);

  struct Position {
    uint64_t epoch = 0;
    uint64_t cursor = 0;  // windows of this epoch already consumed, in [0, windows_per_epoch)
  };

  // Fills inputs and targets, each row-major (count, seq_len), with rows [offset, offset + count)
  // of the next global batch of n windows, then advances by n whatever count is. Returns the
  // number of loss targets (targets not -1) in all n rows: n * seq_len without a loss mask.
  uint64_t next_batch(int n, int offset, int count, int32_t* inputs, int32_t* targets);
  Position position() const { return pos_; }
  void set_position(Position p);
  size_t windows_per_epoch() const { return windows_; }
  int seq_len() const { return seq_len_; }
  uint64_t seed() const { return seed_; }
  // Epochs of up to this many windows are shuffled into a table (Fisher-Yates, 8 bytes a window,
  // two epochs cached); larger ones are ordered by a keyed bijection computed per slot
  // (window_permutation.h), so a rank's memory stays flat however large the corpus.
  static constexpr uint64_t kMaxTabledWindows = uint64_t(1) << 22;
  // Window index (start token / seq_len) at slot `slot` of epoch `epoch`'s order.
  uint64_t window_at(uint64_t epoch, uint64_t slot);
  // The sequence-th window of this loader's order counted from epoch 0 (sequence = epoch *
  // windows_per_epoch + slot) into in and tgt (seq_len each; either may be null: then nothing is
  // written there); returns its loss-target count. Reads nothing when both are null and the
  // stream has no loss mask. A mixture (mixture_loader.h) draws its rows one by one through it.
  uint64_t read_sequence(uint64_t sequence, int32_t* in, int32_t* tgt);

 private:
  const std::vector<uint64_t>& order(uint64_t epoch);

  std::shared_ptr<const TokenStream> tokens_;
  int seq_len_;
  uint64_t seed_;
  size_t windows_;
  Position pos_;
  // Two epochs cached: a batch straddling an epoch boundary needs both orders.
  struct CachedOrder {
    uint64_t epoch = ~0ull;  // ~0 marks an empty slot
    std::vector<uint64_t> windows;
  };
  CachedOrder cache_[2];
  std::vector<int32_t> window_;  // one window's seq_len + 1 tokens and their mask bits
  std::vector<uint8_t> window_mask_;
};

}  // namespace ff
