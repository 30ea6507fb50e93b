#include "io/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <unordered_map>

#include "io/checksum.h"
#include "io/corpus/text_lines.h"

namespace ff {

namespace {

// 3 control ids + 256 byte-fallback pieces + the newline piece.
constexpr int kReservedPieces = 3 + 256 + 1;

// The integer that follows marker in msg, or "" when absent; SentencePiece reports its limits
// only inside free text.
std::string number_after(const std::string& msg, const std::string& marker) {
  size_t at = msg.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  size_t end = at;
  while (end < msg.size() && std::isdigit(static_cast<unsigned char>(msg[end]))) ++end;
  return msg.substr(at, end - at);
}

std::string explain_train_error(const std::string& msg, int vocab_size,
                                const std::string& text_file) {
  const std::string head =
      "tokenizer training on " + text_file + " failed: vocab size " + std::to_string(vocab_size);
  if (msg.find("too high") != std::string::npos) {
    std::string most = number_after(msg, "<= ");
    return head + " is too large for this text, it supports at most " +
           (most.empty() ? "fewer" : most) +
           " pieces; choose a smaller vocab size or train on more text (" + msg + ")";
  }
  if (msg.find("smaller than required_chars") != std::string::npos) {
    std::string least = number_after(msg, " vs ");
    return head + " is too small to hold every character, it needs at least " +
           (least.empty() ? "more" : least) + " pieces; choose a larger vocab size (" + msg + ")";
  }
  return "tokenizer training on " + text_file + " failed: " + msg +
         "; check that the file is readable UTF-8 text";
}

// Feeds lines already in memory, so every caller trains on exactly the lines it encodes.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string>& lines) : lines_(lines) { skip_blank(); }
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override {
    ++i_;
    skip_blank();
  }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  // Blank lines carry no merges; the file-based trainer skips them too.
  void skip_blank() {
    while (i_ < lines_.size() && lines_[i_].empty()) ++i_;
  }
  const std::vector<std::string>& lines_;
  size_t i_ = 0;
};

}  // namespace

void SentencePieceTokenizer::train(const std::string& text_file, int vocab_size,
                      const std::string& model_prefix) {
  train_lines(read_text_lines(text_file, "tokenizer training"), vocab_size, model_prefix,
              text_file);
}

void SentencePieceTokenizer::train_lines(const std::vector<std::string>& lines, int vocab_size,
                            const std::string& model_prefix, const std::string& source) {
  if (!has_text(lines)) {
    throw std::runtime_error("tokenizer training: text file " + source +
                             " is empty (no non-blank line); pass a file with text in it");
  }
  if (vocab_size <= kReservedPieces) {
    throw std::runtime_error("tokenizer training: vocab size " + std::to_string(vocab_size) +
                             " is too small; it must exceed " + std::to_string(kReservedPieces) +
                             " (3 control ids, 256 byte pieces, newline) plus the number of "
                             "distinct characters, so choose at least 300");
  }
  // The processor sets its random seed globally; pin it so the same text gives the same model.
  sentencepiece::SetRandomGeneratorSeed(1234);
  const std::unordered_map<std::string, std::string> args = {
      {"model_prefix", model_prefix},
      {"vocab_size", std::to_string(vocab_size)},
      {"model_type", "bpe"},
      {"byte_fallback", "true"},
      // Identity plus no dummy prefix and kept whitespace is what makes decode(encode(s)) == s.
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"user_defined_symbols", "\n"},
      // Rare characters go to byte pieces instead of spending vocabulary slots.
      {"character_coverage", "0.9995"},
      // Enough lines for any corpus this engine tokenizes on one machine; larger inputs are
      // sampled, which bounds training memory.
      {"input_sentence_size", "2000000"},
      {"shuffle_input_sentence", "true"},
      // Long lines (whole paragraphs) still count; the default 4192 would drop them silently.
      {"max_sentence_length", "65536"},
      {"num_threads", "2"},
      {"minloglevel", "2"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
  };
  LineIterator it(lines);
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &it);
  if (!status.ok()) {
    throw std::runtime_error(explain_train_error(status.ToString(), vocab_size, source));
  }
}

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path)
    : path_(model_path), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    throw std::runtime_error("tokenizer model " + model_path +
                             " not found; run fivefold prepare to train one");
  }
  // The processor parses the very bytes that were hashed, so the checksum describes what is used.
  std::ifstream in(model_path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) {
    throw std::runtime_error("tokenizer model " + model_path + " cannot be read; check its permissions");
  }
  checksum_ = checksum64(bytes.data(), bytes.size());
  auto status = sp_->LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    throw std::runtime_error("tokenizer model " + model_path + " cannot be loaded (" +
                             status.ToString() +
                             "); it is not a SentencePiece model, re-run fivefold prepare");
  }
  int nl = sp_->PieceToId("\n");
  if (nl != sp_->unk_id()) newline_id_ = nl;
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;
SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept = default;
SentencePieceTokenizer& SentencePieceTokenizer::operator=(SentencePieceTokenizer&&) noexcept = default;

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  auto status = sp_->Encode(text, &ids);
  if (!status.ok()) {
    throw std::runtime_error("tokenizer " + path_ + ": encoding failed (" + status.ToString() +
                             "); the input must be valid for the model, re-run fivefold prepare");
  }
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids) const {
  const int n = vocab_size();
  for (int32_t id : ids) {
    if (id < 0 || id >= n) {
      throw std::runtime_error("tokenizer " + path_ + ": cannot decode id " + std::to_string(id) +
                               ", the vocabulary has " + std::to_string(n) +
                               " ids; the model and tokenizer disagree on vocab size");
    }
  }
  std::string out;
  auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &out);
  if (!status.ok()) {
    throw std::runtime_error("tokenizer " + path_ + ": decoding failed (" + status.ToString() +
                             "); check the ids came from this tokenizer");
  }
  return out;
}

int SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int SentencePieceTokenizer::bos_id() const { return sp_->bos_id(); }
int SentencePieceTokenizer::eos_id() const { return sp_->eos_id(); }
int SentencePieceTokenizer::newline_id() const { return newline_id_; }
std::vector<int32_t> SentencePieceTokenizer::document_prefix() const {
  return bos_id() >= 0 ? std::vector<int32_t>{bos_id()} : std::vector<int32_t>{};
}

}  // namespace ff
