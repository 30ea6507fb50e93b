#pragma once
// The one interface every tokenizer kind is used through (prepare, train, sample, eval, export,
// import, `fivefold tokenize`), and the factory that opens a tokenizer file by its content.
// encode never adds special tokens; document_prefix()/document_suffix() say what the tokenizer's
// own convention puts around a document, so callers add them explicitly.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ff {

enum class TokenizerKind {
  sentencepiece_model,   // a SentencePiece .model (protobuf)
  hf_byte_level_bpe,     // tokenizer.json: GPT-2, Llama 3, Qwen2/2.5, SmolLM2
  hf_sentencepiece_bpe,  // tokenizer.json: Llama 2, TinyLlama, Mistral (byte fallback)
};
const char* tokenizer_kind_name(TokenizerKind k);

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  // Thread-safe (const, no shared mutable state). No BOS/EOS: see document_prefix/suffix.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Every id must be below vocab_size() (else throws naming the id). Control ids of a
  // SentencePiece model decode to nothing; a tokenizer.json's added tokens decode to their text.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // One more than the largest id (the embedding rows a model needs).
  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;      // -1 when the tokenizer has none (Qwen2.5)
  virtual int eos_id() const = 0;      // -1 when none
  virtual int newline_id() const = 0;  // the one id that is exactly "\n", -1 if none
  // What the tokenizer's convention puts before and after a document's tokens (a
  // SentencePiece model: BOS before, nothing after; a tokenizer.json: its post-processor).
  virtual std::vector<int32_t> document_prefix() const = 0;
  virtual std::vector<int32_t> document_suffix() const = 0;
  virtual TokenizerKind kind() const = 0;
  // checksum64 of the file's bytes, recorded in shards and checkpoints made with it so a
  // replaced or damaged tokenizer file that still parses is noticed.
  virtual uint64_t checksum() const = 0;
  virtual const std::string& path() const = 0;
};

// A file ending in .json or holding a JSON object is a Hugging Face tokenizer.json, anything else
// a SentencePiece model.
// Unsupported or malformed content is refused with a sentence naming the file and the fix.
std::unique_ptr<TextTokenizer> open_tokenizer(const std::string& path);

// DIR/tokenizer.json or DIR/tokenizer.model, whichever exists; both or neither is refused
// naming the folder and what to do.
std::string tokenizer_file_in(const std::string& dir);
// checksum64 of a tokenizer file's bytes without parsing it: equals checksum() of the tokenizer
// opened from that file.
uint64_t tokenizer_file_checksum(const std::string& path);
// The name a tokenizer of this kind is stored under in a data or run folder.
const char* tokenizer_file_name(TokenizerKind k);

}  // namespace ff
