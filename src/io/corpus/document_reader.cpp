#include "io/corpus/document_reader.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/utf8.h"

namespace ff {

namespace {

namespace fs = std::filesystem;

const char* const kSkipFix = "or pass --on-bad-record skip to skip such records (counted and listed)";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\f\v\n") == std::string::npos; }

// "" when s is UTF-8, else the problem naming the byte.
std::string utf8_problem(const std::string& s, const char* what) {
  const size_t at = first_invalid_utf8(s);
  if (at == std::string::npos) return "";
  return std::string(what) + " is not valid UTF-8 (byte " + std::to_string(at + 1) + ")";
}

}  // namespace

void check_corpus_options(const CorpusOptions& o) {
  if (o.split == TextSplit::separator && o.separator.empty()) {
    throw std::runtime_error("prepare: --doc-separator is empty; pass the line that ends a document (e.g. ---)");
  }
  if (o.text_field.empty()) throw std::runtime_error("prepare: --text-field is empty; pass the jsonl field holding the text");
  if (o.prompt_completion && (o.prompt_field.empty() || o.completion_field.empty())) {
    throw std::runtime_error("prepare: --prompt-field and --completion-field must name jsonl fields");
  }
  if (o.max_record_bytes == 0) throw std::runtime_error("prepare: --max-record-mb must be at least 1");
}

CorpusFormat format_of(const std::string& path, const CorpusOptions& o) {
  if (o.format != CorpusFormat::automatic) return o.format;
  std::string name = fs::path(path).filename().string();
  for (const char* z : {".gz", ".zst", ".zstd"}) {
    if (ends_with(name, z)) {
      name.resize(name.size() - std::string(z).size());
      break;
    }
  }
  return ends_with(name, ".jsonl") || ends_with(name, ".json") ? CorpusFormat::jsonl : CorpusFormat::text;
}

DocumentReader::DocumentReader(std::vector<std::string> files, CorpusOptions options)
    : files_(std::move(files)), options_(std::move(options)) {
  check_corpus_options(options_);
  for (const std::string& f : files_) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (ec) {
      throw std::runtime_error("corpus file " + f + " cannot be read (" + ec.message() +
                               "); check the path and its permissions");
    }
    total_bytes_ += size;
  }
}

DocumentReader::~DocumentReader() = default;

uint64_t DocumentReader::file_bytes_read() const {
  return finished_bytes_ + (lines_ ? lines_->file_bytes_read() : 0);
}

bool DocumentReader::open_next_file() {
  if (lines_) {
    finished_bytes_ += lines_->file_bytes_read();
    ++counts_.files_done;
    lines_.reset();
  }
  if (next_file_ == files_.size()) return false;
  const std::string& path = files_[next_file_++];
  format_ = format_of(path, options_);
  lines_ = std::make_unique<LineReader>(path, options_.max_record_bytes);
  return true;
}

bool DocumentReader::next(Document& doc) {
  for (;;) {
    if (!lines_ && !open_next_file()) return false;
    const bool got = format_ == CorpusFormat::jsonl ? next_jsonl(doc) : next_text(doc);
    if (got) {
      ++counts_.documents;
      return true;
    }
    if (!open_next_file()) return false;
  }
}

void DocumentReader::bad_record(const std::string& where, const std::string& problem,
                                const std::string& fix) {
  if (options_.on_bad_record == BadRecordPolicy::fatal) {
    throw std::runtime_error("corpus " + where + ": " + problem + "; " + fix + ", " + kSkipFix);
  }
  ++counts_.bad_records;
  if (counts_.first_bad.size() < CorpusCounts::kFirstBadKept) {
    counts_.first_bad.push_back(where + ": " + problem);
  }
}

// Reads lines up to the end of a document; false when the file ends with no document left.
bool DocumentReader::next_text(Document& doc) {
  for (;;) {
    doc.text.clear();
    doc.prompt.clear();
    doc.completion.clear();
    doc.where.clear();
    std::string bad_where, problem;  // the first line that is not UTF-8
    uint64_t n_lines = 0;
    bool ended = false;
    while (lines_->next(line_)) {
      if (n_lines == 0) doc.where = lines_->where();
      const bool is_end = options_.split == TextSplit::blank_line ? blank(line_)
                          : options_.split == TextSplit::separator ? line_ == options_.separator
                                                                   : false;
      if (is_end) {
        ended = true;
        if (n_lines == 0) doc.where = lines_->where();
        break;
      }
      if (problem.empty()) {
        problem = utf8_problem(line_, "the line");
        if (!problem.empty()) bad_where = lines_->where();
      }
      if (doc.text.size() + line_.size() + 1 > options_.max_record_bytes) {
        throw std::runtime_error("corpus " + lines_->where() + ": a document longer than " +
                                 std::to_string(options_.max_record_bytes >> 20) +
                                 " MiB; check how documents are separated (--doc-separator, "
                                 "--one-doc-per-line) or raise --max-record-mb");
      }
      if (n_lines++ > 0) doc.text += '\n';
      doc.text += line_;
      if (options_.split == TextSplit::line) {
        ended = true;
        break;
      }
    }
    if (n_lines == 0 && !ended) return false;
    if (!problem.empty()) {
      // The document is the record; its first bad line is the place to look.
      bad_record(bad_where, problem, "convert the file to UTF-8 (iconv -f LATIN1 -t UTF-8)");
      continue;
    }
    if (blank(doc.text)) {
      // A run of separators ends no document: only text between them counts as one.
      if (n_lines > 0 || options_.split != TextSplit::blank_line) ++counts_.empty_documents;
      if (!ended) return false;
      continue;
    }
    return true;
  }
}

bool DocumentReader::next_jsonl(Document& doc) {
  const std::string& text_key = options_.text_field;
  while (lines_->next(line_)) {
    if (blank(line_)) continue;  // trailing blank lines are common and hold no record
    doc.text.clear();
    doc.prompt.clear();
    doc.completion.clear();
    doc.where = lines_->where();
    const std::string bad_utf8 = utf8_problem(line_, "the record");
    if (!bad_utf8.empty()) {
      bad_record(doc.where, bad_utf8, "convert the file to UTF-8");
      continue;
    }
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line_);
    } catch (const nlohmann::json::exception& e) {
      bad_record(doc.where, std::string("bad JSON (") + e.what() + ")",
                 "each line must be one JSON object; fix the line");
      continue;
    }
    if (!record.is_object()) {
      bad_record(doc.where, std::string("a JSON ") + record.type_name() + ", not an object",
                 "each line must be one JSON object; fix the line");
      continue;
    }
    // Takes field name's string into out; false (the record counted as bad) otherwise.
    auto take = [&](const std::string& name, const char* flag, std::string& out) {
      const auto it = record.find(name);
      if (it == record.end()) {
        std::string keys;
        for (const auto& [k, v] : record.items()) keys += (keys.empty() ? "" : ", ") + k;
        bad_record(doc.where, "no field \"" + name + "\" (the record has: " + keys + ")",
                   std::string("name the field with ") + flag);
        return false;
      }
      if (!it->is_string()) {
        bad_record(doc.where,
                   "field \"" + name + "\" is a " + it->type_name() + ", not a string",
                   std::string("make it a string, or name another field with ") + flag);
        return false;
      }
      out = it->get<std::string>();
      return true;
    };
    if (options_.prompt_completion) {
      if (!take(options_.prompt_field, "--prompt-field", doc.prompt)) continue;
      if (!take(options_.completion_field, "--completion-field", doc.completion)) continue;
      if (doc.completion.empty()) {
        ++counts_.empty_documents;  // nothing to learn from a record without an answer
        continue;
      }
    } else {
      if (!take(text_key, "--text-field", doc.text)) continue;
      if (blank(doc.text)) {
        ++counts_.empty_documents;
        continue;
      }
    }
    return true;
  }
  return false;
}

}  // namespace ff
