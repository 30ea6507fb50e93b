#pragma once
// Documents out of corpus files, one at a time, whatever their format: plain text (a blank line,
// a separator line, or each line ends a document), jsonl with a text field, or fine-tuning jsonl
// with prompt and completion fields. Files are read in the order given, each streamed, so memory
// is one line buffer and one document whatever the corpus size.
//
// Bad records (bad JSON, a missing or non-string field, text that is not UTF-8) are never passed
// on: by default the first stops the read with its file:line, the problem and the fix; with
// BadRecordPolicy::skip they are counted and the first few named, for the summary and meta.json.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/corpus/line_reader.h"

namespace ff {

enum class CorpusFormat { automatic, text, jsonl };
enum class TextSplit { blank_line, separator, line };
enum class BadRecordPolicy { fatal, skip };

struct CorpusOptions {
  CorpusFormat format = CorpusFormat::automatic;  // automatic: .jsonl/.json (before .gz/.zst) is jsonl
  TextSplit split = TextSplit::blank_line;        // text files only
  std::string separator;                          // TextSplit::separator: a line equal to it ends a document
  std::string text_field = "text";                // jsonl
  bool prompt_completion = false;                 // jsonl records are (prompt, completion) pairs
  std::string prompt_field = "prompt";
  std::string completion_field = "completion";
  BadRecordPolicy on_bad_record = BadRecordPolicy::fatal;
  size_t max_record_bytes = size_t(64) << 20;     // one line (jsonl) or one document (text)
};

// The options' values checked (a separator for TextSplit::separator, field names not empty);
// throws naming the flag.
void check_corpus_options(const CorpusOptions& o);
// The format a file is read in: o.format, or for automatic by its name (.jsonl/.json after
// dropping .gz/.zst/.zstd), the content's compression being detected separately.
CorpusFormat format_of(const std::string& path, const CorpusOptions& o);

struct Document {
  std::string text;        // text and jsonl text-field documents; lines joined with "\n"
  std::string prompt;      // prompt_completion records
  std::string completion;
  std::string where;       // file:line where the document starts
};

struct CorpusCounts {
  uint64_t files_done = 0;
  uint64_t documents = 0;
  uint64_t empty_documents = 0;   // skipped: nothing but whitespace (or no completion)
  uint64_t bad_records = 0;       // skipped under BadRecordPolicy::skip
  std::vector<std::string> first_bad;  // "file:line: problem" of the first kFirstBadKept
  static constexpr size_t kFirstBadKept = 10;
};

class DocumentReader {
 public:
  DocumentReader(std::vector<std::string> files, CorpusOptions options);
  ~DocumentReader();

  // The next non-empty, well-formed document; false after the last file.
  bool next(Document& doc);
  const CorpusCounts& counts() const { return counts_; }
  // Bytes taken from the files so far and in all (file sizes), for progress and ETA.
  uint64_t file_bytes_read() const;
  uint64_t total_file_bytes() const { return total_bytes_; }
  const std::vector<std::string>& files() const { return files_; }

 private:
  bool next_text(Document& doc);
  bool next_jsonl(Document& doc);
  // Counts (skip) or throws (fatal) for the record at where.
  void bad_record(const std::string& where, const std::string& problem, const std::string& fix);
  bool open_next_file();

  std::vector<std::string> files_;
  CorpusOptions options_;
  CorpusCounts counts_;
  uint64_t total_bytes_ = 0;
  uint64_t finished_bytes_ = 0;  // bytes of the files already closed
  size_t next_file_ = 0;
  std::unique_ptr<LineReader> lines_;
  CorpusFormat format_ = CorpusFormat::text;
  std::string line_;
};

}  // namespace ff
