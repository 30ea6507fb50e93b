#include "io/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "io/append_record.h"
#include "io/atomic_file.h"
#include "io/file_reader.h"

namespace ff {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err, const char* fix) {
  throw std::runtime_error(what + " metrics file " + path + " (" + std::strerror(err) + "); " + fix);
}

// A step record's step; -1 for anything else (an event row, a line that does not parse).
int64_t step_of(const nlohmann::json& rec) {
  if (!rec.is_object() || rec.contains("event") || !rec.contains("step") || !rec["step"].is_number_integer()) return -1;
  return rec["step"].get<int64_t>();
}

std::string read_whole(const std::string& path) {
  FileReader f(path, "metrics file", "delete it to start the metrics afresh");
  std::string text(f.size(), '\0');
  f.read_at(0, text.data(), text.size());
  return text;
}

// Where the file's complete records end: after the last '\n' whose line parses as JSON. A line
// without its newline, or one that does not parse (a crash can leave zeros), is the torn one.
uint64_t end_of_complete_records(const std::string& path) {
  const std::string text = read_whole(path);
  const size_t npos = std::string::npos;
  if (text.empty()) return 0;
  if (text.back() != '\n') {
    const size_t nl = text.rfind('\n');
    return nl == npos ? 0 : nl + 1;
  }
  const size_t nl = text.size() >= 2 ? text.rfind('\n', text.size() - 2) : npos;
  const size_t start = nl == npos ? 0 : nl + 1;
  const size_t end = text.size();
  // nlohmann stops at a NUL as at the end of input, so zeros after a record would still parse.
  const std::string last = text.substr(start, end - 1 - start);
  return last.find('\0') == npos && nlohmann::json::accept(last) ? end : start;
}

// Rewrites the file (atomically) without the records of steps after `step`; returns how many went.
// Only complete records reach here: the torn last line is already cut off.
int drop_steps_after(const std::string& path, int step) {
  const std::string text = read_whole(path);
  std::string kept;
  int dropped = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size() - 1;
    const std::string line = text.substr(start, nl + 1 - start);
    start = nl + 1;
    const bool later = step_of(nlohmann::json::parse(line, nullptr, false)) > step;
    if (later) ++dropped;
    else kept += line;
  }
  if (dropped == 0) return 0;
  AtomicFileWriter w(path);
  w.write(kept.data(), kept.size());
  w.commit();
  return dropped;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path, bool append, int resumed_step) : path_(path) {
  struct stat st {};
  if (append && ::stat(path.c_str(), &st) == 0) {
    const uint64_t keep = end_of_complete_records(path);
    dropped_bytes_ = uint64_t(st.st_size) - keep;
    if (dropped_bytes_ > 0) {
      if (::truncate(path.c_str(), off_t(keep)) != 0) {
        fail("cannot drop the torn last line of", path, errno, "check that it is writable");
      }
      std::fprintf(stderr,
                   "warning: %s ended in a torn line (%llu bytes, from a crash or a full disk); "
                   "dropped it before resuming\n",
                   path.c_str(), (unsigned long long)dropped_bytes_);
    }
    // A run killed after its last checkpoint logged steps it will now repeat.
    if (resumed_step >= 0) dropped_steps_ = drop_steps_after(path, resumed_step);
  }
  // O_APPEND: every write lands at the end, so one record is one contiguous append.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | (append ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) fail("cannot open", path, errno, "check that its directory exists and is writable");
}

double metrics_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
// Each parsable record of a metrics file, in order (a torn or unparsable line is passed over by
// the callers, which see it as a discarded json value); nothing when the file does not exist.
template <class Visit>
void for_each_record(const std::string& path, Visit&& visit) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  const std::string text = read_whole(path);
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    visit(nlohmann::json::parse(text.substr(start, nl - start), nullptr, false));
    start = nl + 1;
  }
}
}  // namespace

int last_logged_step(const std::string& path) {
  int64_t last = 0;
  for_each_record(path, [&](const nlohmann::json& rec) {
    if (const int64_t s = step_of(rec); s >= 0) last = s;
  });
  return int(last);
}

nlohmann::json last_event_since(const std::string& path, const std::string& event, double since) {
  nlohmann::json found = nullptr;
  for_each_record(path, [&](nlohmann::json rec) {
    if (rec.is_object() && rec.value("event", "") == event && rec.value("time", 0.0) >= since) found = std::move(rec);
  });
  return found;
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  // dump() never emits a raw newline (strings are escaped), so one record is one line.
  // Replacing invalid UTF-8 keeps a stray byte in a sample text from killing the run.
  const std::string line =
      record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  if (const int err = append_record(fd_, line.data(), line.size()); err != 0)
    fail("writing", path_, err, "free disk space or check the file system, then resume");
}

}  // namespace ff
