#include "io/tensorboard/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/append_record.h"
#include "io/tensorboard/record_crc.h"

namespace ff {

namespace {

namespace fs = std::filesystem;

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int err, const char* fix) {
  throw std::runtime_error(what + " TensorBoard event file " + path + " (" + std::strerror(err) + "); " + fix +
                           " (or set tensorboard = false)");
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) {
  const double now = unix_seconds_now();
  const std::string base =
      (fs::path(dir) / ("events.out.tfevents." + std::to_string(int64_t(now)) + "." + host_name())).string();
  // O_EXCL: never append to (or cut) a file another run wrote in the same second.
  for (int n = 0; fd_ < 0; ++n) {
    path_ = n == 0 ? base : base + "." + std::to_string(n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_APPEND, 0644);
    if (fd_ < 0 && (errno != EEXIST || n >= 1000))
      fail("cannot create", path_, errno, "check that the run folder is writable");
  }
  append(encode_file_version_event(now));
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::write_scalars(int64_t step, const std::vector<TensorBoardScalar>& scalars, double wall_time) {
  append(encode_scalars_event(wall_time > 0 ? wall_time : unix_seconds_now(), step, scalars));
}

void EventFileWriter::write_text(int64_t step, const std::string& tag, const std::string& markdown) {
  append(encode_text_event(unix_seconds_now(), step, tag, markdown));
}

void EventFileWriter::write_session_start(int64_t step) {
  append(encode_session_start_event(unix_seconds_now(), step));
}

void EventFileWriter::append(const std::string& payload) {
  const std::string record = frame_record(payload);
  if (const int err = append_record(fd_, record.data(), record.size()); err != 0)
    fail("writing", path_, err, "free disk space or check the file system, then resume");
}

}  // namespace ff
