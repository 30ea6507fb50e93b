#pragma once
// Lines of one corpus file, streamed: a line may be of any length up to a stated maximum (a
// single 10 MB line reads like any other), and memory stays one buffer plus the longest line.
// CRLF and LF read alike and a UTF-8 byte-order mark at the start of the file is dropped, so
// files saved by Windows editors give the same documents.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/corpus/byte_source.h"

namespace ff {

class LineReader {
 public:
  // max_line_bytes bounds one line, so a binary file passed by mistake fails with a sentence
  // instead of exhausting memory.
  LineReader(std::string path, size_t max_line_bytes);

  // The next line without its '\n' and without a trailing '\r'; false at the end of the file.
  // Damage in the file (a truncated stream) throws naming the file and the line reached.
  bool next(std::string& line);
  // 1-based number of the line next() returned last.
  uint64_t line_number() const { return line_number_; }
  uint64_t file_bytes_read() const { return source_->file_bytes_read(); }
  const std::string& path() const { return path_; }
  // "path:line", the way every message names a place in the corpus.
  std::string where() const { return path_ + ":" + std::to_string(line_number_); }

 private:
  bool fill();

  std::string path_;
  size_t max_line_bytes_;
  std::unique_ptr<ByteSource> source_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  bool at_file_start_ = true;
  bool at_end_ = false;
  uint64_t line_number_ = 0;
};

}  // namespace ff
