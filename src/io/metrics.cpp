#include "io/metrics.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ff {

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  out_.open(path, append ? std::ios::out | std::ios::app : std::ios::out | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot open metrics file " + path + " for writing (" +
                             std::strerror(errno) +
                             "); check that its directory exists and is writable");
  }
}

void MetricsWriter::write(const nlohmann::json& record) {
  // dump() never emits a raw newline (strings are escaped), so one record is one line.
  // Replacing invalid UTF-8 keeps a stray byte in a sample text from killing the run.
  out_ << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  if (!out_) {
    throw std::runtime_error("writing metrics file " + path_ +
                             " failed; free disk space or check the file system, then resume");
  }
}

}  // namespace ff
