#include "io/tokenizer/bpe_word_cache.h"

#include <functional>

namespace ff {

BpeWordCache::Shard& BpeWordCache::shard_of(std::string_view word) const {
  return shards_[std::hash<std::string_view>()(word) % kShards];
}

bool BpeWordCache::find(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = shard_of(word);
  const std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.words.find(word);
  if (it == s.words.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void BpeWordCache::remember(std::string_view word, const int32_t* ids, size_t n) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = shard_of(word);
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.words.size() < kWordsPerShard) s.words.emplace(std::string(word), std::vector<int32_t>(ids, ids + n));
}

}  // namespace ff
