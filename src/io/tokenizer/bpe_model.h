#pragma once
// A BPE model as Hugging Face's tokenizer.json describes it: a vocabulary, merges whose order is
// their rank (the lowest-ranked adjacent pair merges first, the leftmost among equals), and the
// fallbacks for a character outside the vocabulary (its bytes as <0xXX> pieces, or the unknown
// token, or nothing). Immutable once built, so encoding is thread-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ff {

// Lets maps keyed by std::string be searched with a std::string_view, without a copy.
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
template <class T>
using StringMap = std::unordered_map<std::string, T, TransparentStringHash, std::equal_to<>>;

struct BpeOptions {
  bool byte_fallback = false;  // an unknown character becomes its bytes' <0xXX> pieces
  bool fuse_unk = false;       // consecutive unknown characters become one unknown token
  bool ignore_merges = false;  // a word found whole in the vocabulary is emitted as it is
  int unk_id = -1;             // -1: unknown characters are dropped (as Hugging Face does)
};

class BpeModel {
 public:
  // merges hold token ids; each merge's result must be in the vocabulary (the caller checked).
  BpeModel(StringMap<int32_t> vocab, const std::vector<std::pair<int32_t, int32_t>>& merges,
           const std::vector<int32_t>& merged_ids, BpeOptions options);
  // Appends the ids of one pre-tokenized word (valid UTF-8) to out.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // -1 when text is not in the vocabulary.
  int32_t id_of(std::string_view text) const;
  const StringMap<int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank, result;
  };
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;
  static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  StringMap<int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_ids_[256];  // the <0xXX> pieces, -1 where absent
  BpeOptions options_;
};

}  // namespace ff
