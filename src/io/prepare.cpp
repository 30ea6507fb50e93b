#include "io/prepare.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "io/atomic_file.h"
#include "io/text_lines.h"
#include "io/token_shard.h"
#include "io/sentencepiece_tokenizer.h"

namespace ff {

namespace {

namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Each line as BOS, its tokens, then the newline piece.
std::vector<int32_t> encode_lines(const SentencePieceTokenizer& tok, const std::vector<std::string>& lines,
                                  size_t begin, size_t end) {
  std::vector<std::vector<int32_t>> per_line(end - begin);
  std::string error;
  // SentencePiece encoding is const and thread-safe, and lines are independent. An exception
  // must not escape an OpenMP region (it would abort), so the first one is carried out.
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = int64_t(begin); i < int64_t(end); ++i) {
    try {
      per_line[size_t(i) - begin] = tok.encode(lines[size_t(i)]);
    } catch (const std::exception& e) {
#pragma omp critical(ff_prepare_error)
      if (error.empty()) error = "line " + std::to_string(i + 1) + ": " + e.what();
    }
  }
  if (!error.empty()) throw std::runtime_error("prepare: encoding failed at " + error);
  size_t total = 0;
  for (const auto& v : per_line) total += v.size() + 2;
  std::vector<int32_t> out;
  out.reserve(total);
  for (const auto& v : per_line) {
    out.push_back(tok.bos_id());
    out.insert(out.end(), v.begin(), v.end());
    out.push_back(tok.newline_id());
  }
  return out;
}

// Everything after the split: tokenizer, shards, then meta.json, all into the folder of r's paths.
void write_outputs(const std::vector<std::string>& lines, size_t n_val, int vocab_size,
                   const std::string& text_file, double val_fraction, PrepareResult& r);

// What a prepare writes, in the order it is moved into place: meta.json, the mark of a finished
// prepare, comes last.
const char* const kOutputs[] = {"tokenizer.vocab", "tokenizer.model", "train.bin", "val.bin", "meta.json"};

PrepareResult placed_in(PrepareResult r, const fs::path& dir) {
  r.tokenizer_path = (dir / "tokenizer.model").string();
  r.train_path = (dir / "train.bin").string();
  r.val_path = (dir / "val.bin").string();
  r.meta_path = (dir / "meta.json").string();
  return r;
}

}  // namespace

PrepareResult prepare_corpus(const std::string& text_file, int vocab_size,
                             const std::string& out_dir, double val_fraction) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw std::runtime_error("prepare: val_fraction must be in [0, 1), got " +
                             std::to_string(val_fraction) + "; 0.05 is a good default");
  }
  const std::vector<std::string> lines = read_text_lines(text_file, "prepare");
  if (!has_text(lines)) {
    throw std::runtime_error("prepare: text file " + text_file +
                             " is empty (no non-blank line); pass a file with text in it");
  }
  const size_t n = lines.size();
  size_t n_val = size_t(std::llround(double(n) * val_fraction));
  // A requested split always gets at least one line on each side.
  if (val_fraction > 0 && n_val == 0) n_val = 1;
  if (n_val >= n) {
    throw std::runtime_error("prepare: " + text_file + " has only " + std::to_string(n) +
                             " lines, too few to hold out a validation split; use more text or "
                             "val_fraction 0");
  }

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    throw std::runtime_error("prepare: cannot create output directory " + out_dir + " (" +
                             ec.message() + "); choose a writable location");
  }
  // Built in a staging folder and moved in only when complete: a prepare that fails midway (a
  // full disk) leaves the folder as it was instead of a new tokenizer beside old or no shards.
  const fs::path dir(out_dir), staging = dir / ".prepare-partial";
  fs::remove_all(staging, ec);
  PrepareResult staged = placed_in({}, staging);
  try {
    fs::create_directories(staging);
    write_outputs(lines, n_val, vocab_size, text_file, val_fraction, staged);
  } catch (const std::exception& e) {
    fs::remove_all(staging, ec);
    throw std::runtime_error(std::string(e.what()) + " (" + out_dir + " was left as it was)");
  }
  // Renames cannot run out of space. A kill between them leaves no meta.json (removed first), and
  // shards whose recorded tokenizer checksum disagrees with the tokenizer beside them.
  fs::remove(dir / "meta.json", ec);
  for (const char* name : kOutputs) fs::rename(staging / name, dir / name);
  fs::remove(staging, ec);
  return placed_in(staged, dir);
}

namespace {

void write_outputs(const std::vector<std::string>& lines, size_t n_val, int vocab_size,
                   const std::string& text_file, double val_fraction, PrepareResult& r) {
  const size_t n = lines.size();
  const fs::path dir = fs::path(r.tokenizer_path).parent_path();
  auto t0 = std::chrono::steady_clock::now();
  SentencePieceTokenizer::train_lines(lines, vocab_size, (dir / "tokenizer").string(), text_file);
  r.tokenizer_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const SentencePieceTokenizer tok(r.tokenizer_path);
  if (tok.newline_id() < 0) {
    throw std::runtime_error("prepare: " + r.tokenizer_path +
                             " has no newline piece; it was not written by SentencePieceTokenizer::train, "
                             "delete it and re-run fivefold prepare");
  }
  r.vocab_size = tok.vocab_size();
  r.bos_id = tok.bos_id();
  r.eos_id = tok.eos_id();
  r.newline_id = tok.newline_id();
  r.train_lines = n - n_val;
  r.val_lines = n_val;
  const std::vector<int32_t> train = encode_lines(tok, lines, 0, n - n_val);
  const std::vector<int32_t> val = encode_lines(tok, lines, n - n_val, n);
  r.train_tokens = train.size();
  r.val_tokens = val.size();
  write_token_shard(r.train_path, train, r.vocab_size, tok.checksum());
  write_token_shard(r.val_path, val, r.vocab_size, tok.checksum());
  r.encode_seconds = seconds_since(t0);

  const nlohmann::json meta = {
      {"format", "fivefold-prepared-corpus"},
      {"version", 1},
      {"source_file", fs::absolute(text_file).lexically_normal().string()},
      {"vocab_size", r.vocab_size},
      {"bos_id", r.bos_id},
      {"eos_id", r.eos_id},
      {"newline_id", r.newline_id},
      {"val_fraction", val_fraction},
      {"train_lines", r.train_lines},
      {"val_lines", r.val_lines},
      {"train_tokens", r.train_tokens},
      {"val_tokens", r.val_tokens},
      {"tokenizer", "tokenizer.model"},
      {"train", "train.bin"},
      {"val", "val.bin"},
      {"layout", "each line: bos_id, its tokens, newline_id"},
  };
  write_file_atomic(r.meta_path, meta.dump(2) + "\n");
}

}  // namespace

}  // namespace ff
