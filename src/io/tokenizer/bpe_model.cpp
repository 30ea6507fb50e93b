#include "io/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "io/utf8.h"

namespace ff {

BpeModel::BpeModel(StringMap<int32_t> vocab,
                   const std::vector<std::pair<int32_t, int32_t>>& merges, const std::vector<int32_t>& merged_ids,
                   BpeOptions options)
    : vocab_(std::move(vocab)), options_(options) {
  merges_.reserve(merges.size());
  // A pair listed twice keeps its later rank, as a map built from the list in order does.
  for (size_t r = 0; r < merges.size(); ++r)
    merges_[pair_key(merges[r].first, merges[r].second)] = Merge{int32_t(r), merged_ids[r]};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = id_of(name);
  }
}

int32_t BpeModel::id_of(std::string_view text) const {
  const auto it = vocab_.find(text);
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  bool last_was_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::min(utf8_char_length(static_cast<unsigned char>(word[i])), word.size() - i);
    const std::string_view ch = word.substr(i, n);
    i += n;
    if (const int32_t id = id_of(ch); id >= 0) {
      ids.push_back(id);
      last_was_unk = false;
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : ch) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : ch) ids.push_back(byte_ids_[b]);
        last_was_unk = false;
        continue;
      }
    }
    if (options_.unk_id < 0) continue;
    if (!(options_.fuse_unk && last_was_unk)) ids.push_back(options_.unk_id);
    last_was_unk = true;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (options_.ignore_merges) {
    if (const int32_t id = id_of(word); id >= 0) return out.push_back(id);
  }
  std::vector<int32_t> ids;
  initial_symbols(word, ids);
  const int n = int(ids.size());
  if (n < 2) return out.insert(out.end(), ids.begin(), ids.end()), void();
  // Symbols form a linked list; candidate merges wait in a heap ordered by (rank, position) and
  // are checked against the current symbols when popped, since an earlier merge may have used
  // one of their halves.
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left, right, result;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto offer = [&](int a) {
    const int b = next[a];
    if (a < 0 || b < 0) return;
    const auto it = merges_.find(pair_key(ids[a], ids[b]));
    if (it != merges_.end()) heap.push({it->second.rank, a, ids[a], ids[b], it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) offer(i);
  std::vector<bool> gone(n, false);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int a = c.pos, b = next[a];
    if (gone[a] || b < 0 || ids[a] != c.left || ids[b] != c.right) continue;
    ids[a] = c.result;
    gone[b] = true;
    next[a] = next[b];
    if (next[b] >= 0) prev[next[b]] = a;
    if (prev[a] >= 0) offer(prev[a]);
    offer(a);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
}

}  // namespace ff
