#pragma once
// SentencePiece models: the ones `fivefold prepare` trains and any reused .model file. Training fixes the conventions the rest of the engine
// relies on: byte fallback (any UTF-8 text round-trips exactly, no <unk> in practice), identity
// normalization without a dummy prefix (decode(encode(s)) == s byte for byte), and "\n" as a
// single dedicated piece, so a corpus kept as lines decodes back into lines.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ff {

class SentencePieceTokenizer final : public TextTokenizer {
 public:
  // Writes model_prefix.model (and model_prefix.vocab, a human-readable listing). The vocabulary
  // reserves 3 control ids (unk=0, bos=1, eos=2), 256 byte pieces and the newline piece, so
  // vocab_size must be larger than 260 plus the distinct characters of the text.
  // Lines are read with any trailing '\r' dropped, so CRLF and LF files give the same model.
  static void train(const std::string& text_file, int vocab_size, const std::string& model_prefix);
  // The same from lines already in memory; source names them in error messages.
  static void train_lines(const std::vector<std::string>& lines, int vocab_size,
                          const std::string& model_prefix, const std::string& source);

  explicit SentencePieceTokenizer(const std::string& model_path);
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept;
  SentencePieceTokenizer& operator=(SentencePieceTokenizer&&) noexcept;

  // Thread-safe: SentencePiece encoding does not mutate the processor.
  std::vector<int32_t> encode(std::string_view text) const override;
  // Control ids (bos/eos) decode to nothing; the newline id decodes to "\n".
  std::string decode(const std::vector<int32_t>& ids) const override;
  int vocab_size() const override;
  int bos_id() const override;
  int eos_id() const override;
  int newline_id() const override;  // -1 for models without a "\n" piece
  // BOS before a document (as Hugging Face's LlamaTokenizer adds it), nothing after.
  std::vector<int32_t> document_prefix() const override;
  std::vector<int32_t> document_suffix() const override { return {}; }
  TokenizerKind kind() const override { return TokenizerKind::sentencepiece_model; }
  const std::string& path() const override { return path_; }
  uint64_t checksum() const override { return checksum_; }

 private:
  std::string path_;
  uint64_t checksum_ = 0;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int newline_id_ = -1;
};

}  // namespace ff
