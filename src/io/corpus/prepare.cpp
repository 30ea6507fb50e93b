#include "io/corpus/prepare.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <stdexcept>
#include <thread>

#include "io/atomic_file.h"
#include "io/corpus/input_paths.h"
#include "io/corpus/encode_pipeline.h"
#include "io/corpus/prepare_progress.h"
#include "io/corpus/shard_series.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokenizer/tokenizer_files.h"

namespace ff {

namespace {

namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check_options(const PrepareOptions& o) {
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw std::runtime_error("prepare: val_fraction must be in [0, 1), got " +
                             std::to_string(o.val_fraction) + "; 0.05 is a good default");
  }
  if (o.shard_tokens == 0) throw std::runtime_error("prepare: --shard-tokens must be at least 1");
  if (o.threads < 0) throw std::runtime_error("prepare: --threads must be 0 (every core) or more");
  if (o.tokenizer.empty() && o.tokenizer_sample_bytes == 0) {
    throw std::runtime_error("prepare: --tokenizer-sample-mb must be at least 1 to train a tokenizer");
  }
  if (o.out_dir.empty()) throw std::runtime_error("prepare: no output folder; pass --out DIR");
  check_corpus_options(o.corpus);
}

std::string no_document_error(const std::vector<std::string>& inputs, const CorpusCounts& c) {
  return "prepare: " + inputs.front() + (inputs.size() > 1 ? " and the other inputs" : "") +
         " hold no document: the text is empty (" + std::to_string(c.empty_documents) +
         " empty documents, " + std::to_string(c.bad_records) +
         " bad records skipped); pass files with text in them";
}

// Trains the tokenizer on the corpus's first sample_bytes of document text (all of it when the
// corpus is smaller), fed as the lines the documents are made of; says which in the result.
std::string train_tokenizer(const std::vector<std::string>& files, const PrepareOptions& o,
                            const fs::path& staging) {
  DocumentReader reader(files, o.corpus);
  std::vector<std::string> lines;
  uint64_t bytes = 0;
  bool whole = true;
  auto add = [&](const std::string& text) {
    size_t begin = 0;
    for (size_t nl; (nl = text.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      lines.push_back(text.substr(begin, nl - begin));
    }
    lines.push_back(text.substr(begin));
    bytes += text.size();
  };
  for (Document d; reader.next(d);) {
    if (bytes >= o.tokenizer_sample_bytes) {
      whole = false;
      break;
    }
    add(d.text);
    add(d.prompt);
    add(d.completion);
  }
  if (reader.counts().documents == 0) throw std::runtime_error(no_document_error(o.inputs, reader.counts()));
  SentencePieceTokenizer::train_lines(lines, o.vocab_size, (staging / "tokenizer").string(), o.inputs.front());
  return whole ? "trained on every document (" + std::to_string(bytes) + " bytes)"
               : "trained on the first " + std::to_string(reader.counts().documents - 1) +
                     " documents (" + std::to_string(bytes) + " bytes, --tokenizer-sample-mb)";
}

// What goes around every document's tokens: the tokenizer's own document prefix (BOS for a
// SentencePiece model and for a post-processor that adds one, nothing for GPT-2's) and its suffix,
// or EOS when the convention adds none, so documents packed into one window stay separated and
// the model learns where a document ends.
struct DocumentFrame {
  std::vector<int32_t> prefix, suffix;
};

DocumentFrame frame_of(const TextTokenizer& tok) {
  DocumentFrame f{tok.document_prefix(), tok.document_suffix()};
  if (f.suffix.empty() && tok.eos_id() >= 0) f.suffix.push_back(tok.eos_id());
  return f;
}

// A text document: frame around its tokens. A fine-tuning record: frame around prompt then
// completion, the loss mask 1 on the completion and the closing frame only, so the model learns
// to answer (and to stop) but not to write prompts.
EncodedDocument encode_document(const TextTokenizer& tok, const DocumentFrame& f, const Document& d, bool pair) {
  EncodedDocument out;
  out.ids = f.prefix;
  const std::vector<int32_t> first = tok.encode(pair ? d.prompt : d.text);
  out.ids.insert(out.ids.end(), first.begin(), first.end());
  if (pair) {
    out.loss_mask.assign(out.ids.size(), 0);
    const std::vector<int32_t> answer = tok.encode(d.completion);
    out.ids.insert(out.ids.end(), answer.begin(), answer.end());
  }
  out.ids.insert(out.ids.end(), f.suffix.begin(), f.suffix.end());
  if (pair) out.loss_mask.resize(out.ids.size(), 1);
  return out;
}

// Document i goes to validation when it is among the first val_docs, or when the running count
// of val_fraction * documents steps up at it: evenly spread, exact in the long run, decided
// without knowing the corpus size.
bool is_validation(uint64_t i, const PrepareOptions& o) {
  if (o.val_docs > 0) return i < o.val_docs;
  return std::floor(double(i + 1) * o.val_fraction) > std::floor(double(i) * o.val_fraction);
}

bool is_prepare_output(const std::string& name) {
  static const std::regex shard(R"((train|val)(-\d{5})?\.bin)");
  return name == "meta.json" || name == "tokenizer.model" || name == "tokenizer.vocab" ||
         name == "tokenizer.json" || std::regex_match(name, shard);
}

// Renames cannot run out of space. meta.json goes first and comes back last, so a kill in
// between leaves a folder without meta.json: nothing a loader takes for a finished prepare.
void move_into_place(const fs::path& staging, const fs::path& dir) {
  fs::remove(dir / "meta.json");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && is_prepare_output(e.path().filename().string())) fs::remove(e.path());
  }
  for (const auto& e : fs::directory_iterator(staging)) {
    if (e.path().filename() != "meta.json") fs::rename(e.path(), dir / e.path().filename());
  }
  fs::rename(staging / "meta.json", dir / "meta.json");
  fs::remove(staging);
}

std::vector<std::string> paths_in(const fs::path& dir, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back((dir / n).string());
  return out;
}

nlohmann::json absolute_paths(const std::vector<std::string>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : specs) out.push_back(fs::absolute(s).lexically_normal().string());
  return out;
}

// Everything but the final move: tokenizer, shards, then meta.json, into staging.
PrepareResult build(const PrepareOptions& o, const std::vector<std::string>& files, const fs::path& staging) {
  PrepareResult r;
  auto t0 = std::chrono::steady_clock::now();
  std::string tokenizer_source, tokenizer_name;
  if (o.tokenizer.empty()) {
    tokenizer_source = train_tokenizer(files, o, staging);
    tokenizer_name = tokenizer_file_name(TokenizerKind::sentencepiece_model);
    r.tokenizer_seconds = seconds_since(t0);
  } else {
    // Stored under its kind's name, so the data folder holds the one tokenizer training opens; the
    // Hugging Face files beside it travel with it to the run folder and the exported model.
    tokenizer_name = tokenizer_file_name(open_tokenizer(o.tokenizer)->kind());
    copy_tokenizer_files(o.tokenizer, staging.string(), tokenizer_name);
    tokenizer_source = "reused " + fs::absolute(o.tokenizer).lexically_normal().string();
  }
  const std::unique_ptr<TextTokenizer> opened = open_tokenizer((staging / tokenizer_name).string());
  const TextTokenizer& tok = *opened;
  r.tokenizer_path = tokenizer_name;
  r.vocab_size = tok.vocab_size();
  r.bos_id = tok.bos_id();
  r.eos_id = tok.eos_id();

  t0 = std::chrono::steady_clock::now();
  DocumentReader reader(files, o.corpus);
  r.input_bytes = reader.total_file_bytes();
  const bool masked = o.corpus.prompt_completion;
  ShardSeries train(staging.string(), "train", r.vocab_size, tok.checksum(), o.shard_tokens, masked);
  ShardSeries val(staging.string(), "val", r.vocab_size, tok.checksum(), o.shard_tokens, masked);
  const bool want_val = o.val_docs > 0 || o.val_fraction > 0;
  const DocumentFrame frame = frame_of(tok);
  PrepareProgress progress(o.progress, reader.total_file_bytes());
  // The last training document waits here, so a small corpus whose fraction picked no
  // validation document can still give it one.
  std::optional<EncodedDocument> held;
  uint64_t index = 0;
  EncodePipelineHooks hooks;
  hooks.encode = [&](const Document& d) { return encode_document(tok, frame, d, masked); };
  hooks.consume = [&](EncodedDocument&& d) {
    if (is_validation(index++, o)) {
      val.append(d);
      return;
    }
    if (held) train.append(*held);
    held = std::move(d);
  };
  hooks.batch_done = [&](const ReadProgress& p) {
    progress.update(p.file_bytes, index, train.tokens() + val.tokens(), p.bad_records);
  };
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  run_encode_pipeline(reader, threads, hooks);
  progress.finish();
  const CorpusCounts& counts = reader.counts();
  if (index == 0) throw std::runtime_error(no_document_error(o.inputs, counts));
  if (held) (want_val && val.documents() == 0 ? val : train).append(*held);
  if (train.documents() == 0) {
    throw std::runtime_error("prepare: " + o.inputs.front() + " has only " + std::to_string(index) +
                             " document" + (index == 1 ? "" : "s") +
                             ", too few to hold out a validation split; use more text, fewer "
                             "--val-docs, or --val-fraction 0");
  }
  train.finish();
  val.finish();
  r.encode_seconds = seconds_since(t0);
  r.train_documents = train.documents();
  r.val_documents = val.documents();
  r.train_tokens = train.tokens();
  r.val_tokens = val.tokens();
  r.empty_documents = counts.empty_documents;
  r.bad_records = counts.bad_records;
  r.first_bad_records = counts.first_bad;

  nlohmann::json meta = {
      {"format", "fivefold-prepared-corpus"},
      {"version", 2},
      {"inputs", absolute_paths(o.inputs)},
      {"input_files", files.size()},
      {"input_bytes", r.input_bytes},
      {"vocab_size", r.vocab_size},
      {"bos_id", r.bos_id},
      {"eos_id", r.eos_id},
      {"tokenizer", tokenizer_name},
      {"tokenizer_source", tokenizer_source},
      {"layout", "each document: bos_id (if any), its tokens, eos_id (if any); text lines joined with \"\\n\""},
      {"loss_mask", o.corpus.prompt_completion ? "1 on completion tokens and eos_id, 0 on bos_id and prompt" : "none"},
      {"train_shards", train.shard_names()},
      {"val_shards", val.shard_names()},
      {"train_documents", r.train_documents},
      {"val_documents", r.val_documents},
      {"train_tokens", r.train_tokens},
      {"val_tokens", r.val_tokens},
      {"empty_documents", r.empty_documents},
      {"bad_records", r.bad_records},
      {"first_bad_records", r.first_bad_records},
      {"shard_tokens", o.shard_tokens},
  };
  if (o.val_docs > 0) {
    meta["val_docs"] = o.val_docs;
  } else {
    meta["val_fraction"] = o.val_fraction;
  }
  write_file_atomic((staging / "meta.json").string(), meta.dump(2) + "\n");
  r.train_paths = train.shard_names();
  r.val_paths = val.shard_names();
  return r;
}

}  // namespace

PrepareResult prepare_corpus(const PrepareOptions& o) {
  check_options(o);
  const std::vector<std::string> files = expand_inputs(o.inputs);
  if (!o.tokenizer.empty()) open_tokenizer(o.tokenizer);  // refused here, before any work, if bad

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) {
    throw std::runtime_error("prepare: cannot create output directory " + o.out_dir + " (" +
                             ec.message() + "); choose a writable location");
  }
  const fs::path dir(o.out_dir), staging = dir / ".prepare-partial";
  fs::remove_all(staging, ec);
  PrepareResult r;
  try {
    fs::create_directories(staging);
    r = build(o, files, staging);
  } catch (const std::exception& e) {
    fs::remove_all(staging, ec);
    throw std::runtime_error(std::string(e.what()) + " (" + o.out_dir + " was left as it was)");
  }
  move_into_place(staging, dir);
  r.tokenizer_path = (dir / r.tokenizer_path).string();
  r.meta_path = (dir / "meta.json").string();
  r.train_paths = paths_in(dir, r.train_paths);
  r.val_paths = paths_in(dir, r.val_paths);
  return r;
}

PrepareResult prepare_corpus(const std::string& text_file, int vocab_size,
                             const std::string& out_dir, double val_fraction) {
  PrepareOptions o;
  o.inputs = {text_file};
  o.out_dir = out_dir;
  o.vocab_size = vocab_size;
  o.val_fraction = val_fraction;
  o.corpus.format = CorpusFormat::text;
  o.corpus.split = TextSplit::line;
  return prepare_corpus(o);
}

}  // namespace ff
