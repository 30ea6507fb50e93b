#include "io/tokenizer/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "io/checksum.h"
#include "io/tokenizer/hf_tokenizer.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"

namespace ff {

namespace fs = std::filesystem;

const char* tokenizer_kind_name(TokenizerKind k) {
  switch (k) {
    case TokenizerKind::sentencepiece_model: return "SentencePiece model";
    case TokenizerKind::hf_byte_level_bpe: return "Hugging Face byte-level BPE";
    case TokenizerKind::hf_sentencepiece_bpe: return "Hugging Face SentencePiece-style BPE";
  }
  return "unknown";
}

const char* tokenizer_file_name(TokenizerKind k) {
  return k == TokenizerKind::sentencepiece_model ? "tokenizer.model" : "tokenizer.json";
}

namespace {

// A JSON document opens with '{' (after any whitespace); a SentencePiece model is a protobuf,
// whose first byte is a field tag, never '{'.
bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  for (int c; (c = in.get()) != EOF;)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c == '{';
  return false;
}

}  // namespace

std::unique_ptr<TextTokenizer> open_tokenizer(const std::string& path) {
  if (fs::path(path).extension() == ".json" || looks_like_json(path)) return std::make_unique<HfTokenizer>(path);
  return std::make_unique<SentencePieceTokenizer>(path);
}

uint64_t tokenizer_file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tokenizer " + path + " cannot be opened; check that it exists and is readable");
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return checksum64(bytes.data(), bytes.size());
}

std::string tokenizer_file_in(const std::string& dir) {
  const fs::path json = fs::path(dir) / "tokenizer.json", model = fs::path(dir) / "tokenizer.model";
  std::error_code ec;
  const bool has_json = fs::is_regular_file(json, ec), has_model = fs::is_regular_file(model, ec);
  if (has_json && has_model)
    throw std::runtime_error("folder " + dir + " holds both tokenizer.json and tokenizer.model, so which one "
                             "made its token ids is ambiguous; remove the one that was not used");
  if (!has_json && !has_model)
    throw std::runtime_error("folder " + dir + " has no tokenizer (neither tokenizer.json nor tokenizer.model); "
                             "run `fivefold prepare` into it, or copy the tokenizer file its data was made with");
  return (has_json ? json : model).string();
}

}  // namespace ff
