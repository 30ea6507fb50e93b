#pragma once
// A Hugging Face tokenizer.json with a BPE model: byte-level BPE (GPT-2, Llama 3, Qwen2/2.5,
// SmolLM2) and SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, Mistral).
// Everything the file says is either implemented exactly or refused by name when it is opened
// (src/io/README.md lists what is supported).
#include <memory>
#include <string>
#include <vector>

#include "io/tokenizer/bpe_model.h"
#include "io/tokenizer/bpe_word_cache.h"
#include "io/tokenizer/hf_decoder.h"
#include "io/tokenizer/hf_text_stages.h"
#include "io/tokenizer/tokenizer.h"

namespace ff {

class HfTokenizer final : public TextTokenizer {
 public:
  // jit: compile the split patterns with PCRE2's JIT (the faster choice, src/io/README.md).
  explicit HfTokenizer(const std::string& path, bool jit = true);
  ~HfTokenizer() override;

  std::vector<int32_t> encode(std::string_view text) const override;
  // Added tokens, special ones included, decode to their text.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int vocab_size() const override { return int(token_text_.size()); }
  int bos_id() const override { return bos_id_; }
  int eos_id() const override { return eos_id_; }
  int newline_id() const override { return newline_id_; }
  std::vector<int32_t> document_prefix() const override { return document_.prefix; }
  std::vector<int32_t> document_suffix() const override { return document_.suffix; }
  TokenizerKind kind() const override { return kind_; }
  uint64_t checksum() const override { return checksum_; }
  const std::string& path() const override { return path_; }

 private:
  struct AddedToken {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  struct AddedMatch {
    size_t begin, end;
    int32_t id;
  };
  void read_model(const nlohmann::json& model, const HfJsonPlace& where);
  void read_added_tokens(const nlohmann::json& root, const HfJsonPlace& where);
  // The leftmost, then longest, added token at or after from (begin == npos when none).
  AddedMatch next_added(std::string_view text, size_t from) const;
  void encode_text(std::string_view text, bool at_text_start, std::vector<int32_t>& out) const;
  int32_t id_of_text(const std::string& text) const;

  std::string path_;
  uint64_t checksum_ = 0;
  TokenizerKind kind_ = TokenizerKind::hf_byte_level_bpe;
  std::unique_ptr<BpeModel> model_;
  BpeWordCache cache_;
  std::unique_ptr<HfNormalizer> normalizer_;
  std::unique_ptr<HfPreTokenizer> pre_tokenizer_;
  std::unique_ptr<HfDecoder> decoder_;
  HfDocumentTokens document_;
  std::vector<AddedToken> added_;
  std::vector<std::vector<size_t>> added_by_first_byte_;  // indices into added_, longest first
  std::vector<std::string> token_text_;                    // id -> text; a gap in the ids is ""
  std::vector<bool> has_id_;
  int bos_id_ = -1, eos_id_ = -1, newline_id_ = -1;
};

}  // namespace ff
