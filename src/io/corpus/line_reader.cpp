#include "io/corpus/line_reader.h"

#include <cstring>
#include <stdexcept>

namespace ff {

namespace {
constexpr size_t kBufferBytes = size_t(1) << 20;
}

LineReader::LineReader(std::string path, size_t max_line_bytes)
    : path_(std::move(path)),
      max_line_bytes_(max_line_bytes),
      source_(open_byte_source(path_)),
      buffer_(kBufferBytes) {}

bool LineReader::fill() {
  if (at_end_) return false;
  try {
    end_ = source_->read(buffer_.data(), buffer_.size());
  } catch (const std::exception& e) {
    throw std::runtime_error("corpus " + path_ + ":" + std::to_string(line_number_ + 1) + ": " +
                             e.what());
  }
  begin_ = 0;
  if (at_file_start_ && end_ > 0) {
    at_file_start_ = false;
    if (end_ >= 3 && std::memcmp(buffer_.data(), "\xEF\xBB\xBF", 3) == 0) begin_ = 3;
  }
  at_end_ = end_ == 0;
  return !at_end_;
}

bool LineReader::next(std::string& line) {
  line.clear();
  bool any = false;
  for (;;) {
    if (begin_ == end_ && !fill()) break;
    any = true;
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    const size_t take = nl ? size_t(static_cast<const char*>(nl) - start) : end_ - begin_;
    if (line.size() + take > max_line_bytes_) {
      throw std::runtime_error(
          "corpus " + path_ + ":" + std::to_string(line_number_ + 1) + ": a line longer than " +
          std::to_string(max_line_bytes_ >> 20) +
          " MiB; check that the file is text (or jsonl), or raise --max-record-mb");
    }
    line.append(start, take);
    begin_ += take;
    if (nl) {
      ++begin_;
      break;
    }
  }
  if (!any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

}  // namespace ff
