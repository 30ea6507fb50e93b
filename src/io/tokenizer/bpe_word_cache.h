#pragma once
// Remembers the ids of words already encoded by a BPE model: natural text repeats a small set of
// words, and a lookup is cheaper than merging again. Shared by threads: the words hash to one of
// many shards, each behind its own mutex, so two threads rarely wait on each other. Bounded:
// once a shard is full it stops remembering (the ids stay correct, only slower).
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/tokenizer/bpe_model.h"

namespace ff {

class BpeWordCache {
 public:
  // Words longer than this are merged every time (a line without pre-tokenization is one word).
  static constexpr size_t kMaxWordBytes = 64;
  // Appends the cached ids of word to out and returns true, or returns false.
  bool find(std::string_view word, std::vector<int32_t>& out) const;
  void remember(std::string_view word, const int32_t* ids, size_t n) const;

 private:
  static constexpr size_t kShards = 64, kWordsPerShard = 8192;
  struct Shard {
    std::mutex mutex;
    StringMap<std::vector<int32_t>> words;
  };
  Shard& shard_of(std::string_view word) const;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace ff
