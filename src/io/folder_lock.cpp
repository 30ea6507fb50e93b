#include "io/folder_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ff {

namespace fs = std::filesystem;

namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid it
// names one process, so a pid reused by another program is not mistaken for the holder.
long long process_start_ticks(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::stoll(field);
  return -1;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) return s;
    s.append(buf, size_t(n));
    at += n;
  }
}

// "train, pid 123 on host vm since 2026-11-27 07:40:12 UTC", or what the file says when it is
// not a record fivefold wrote.
std::string describe_holder(const std::string& record) {
  const nlohmann::json j = nlohmann::json::parse(record, nullptr, false);
  if (!j.is_object() || !j.contains("pid") || !j.contains("host")) return "a holder whose record is unreadable";
  return j.value("command", std::string("fivefold")) + ", pid " + std::to_string(j.value("pid", 0L)) +
         " on host " + j.value("host", std::string()) + " since " + j.value("since", std::string("?"));
}

// Without flock: whether the record's holder is certainly alive (this host, same pid and start),
// and whether it cannot be checked at all (another host).
enum class RecordHolder { none, alive_here, elsewhere };
RecordHolder judge_record(const std::string& record) {
  const nlohmann::json j = nlohmann::json::parse(record, nullptr, false);
  if (!j.is_object() || !j.contains("pid") || !j.contains("host")) return RecordHolder::none;
  if (j.value("host", std::string()) != this_host()) return RecordHolder::elsewhere;
  const long pid = j.value("pid", 0L);
  const bool exists = pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM);
  return exists && process_start_ticks(pid) == j.value("pid_start_ticks", -2LL) ? RecordHolder::alive_here
                                                                                 : RecordHolder::none;
}

bool flock_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL; }

}  // namespace

FolderLock::FolderLock(const std::string& dir, const std::string& command, const std::string& head)
    : path_((fs::path(dir) / kFolderLockName).string()) {
  const std::string in_use = head + "is in use by ";
  const std::string fix = " (lock file " + path_ + "); wait for that job to end or stop it, or choose another folder";
  for (int attempt = 0;; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error(head + "cannot hold its lock file " + path_ + " (" + std::strerror(errno) + ")");
    std::string previous;
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      previous = read_all(fd_);
      if (!flock_unsupported(err)) {
        ::close(fd_);
        fd_ = -1;
        if (err == EWOULDBLOCK)
          throw std::runtime_error(in_use + (previous.empty() ? "another process" : describe_holder(previous)) + fix);
        throw std::runtime_error(head + "cannot lock " + path_ + " (" + std::strerror(err) + ")");
      }
      const RecordHolder holder = judge_record(previous);
      if (holder != RecordHolder::none) {
        ::close(fd_);
        fd_ = -1;
        if (holder == RecordHolder::alive_here) throw std::runtime_error(in_use + describe_holder(previous) + fix);
        throw std::runtime_error(in_use + describe_holder(previous) + " (lock file " + path_ +
                                 "); this filesystem has no flock, so a holder on another host cannot be checked: "
                                 "if that job has ended, delete the lock file");
      }
    } else {
      // The holder may have released (deleted) the file between our open and our flock: then
      // this lock is on a file no one else will see; open the path again.
      struct stat held {}, now {};
      if (::fstat(fd_, &held) != 0 || ::stat(path_.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
          held.st_dev != now.st_dev) {
        ::close(fd_);
        fd_ = -1;
        if (attempt < 100) continue;
        throw std::runtime_error(head + "cannot hold its lock file " + path_ + ": it keeps being replaced");
      }
      previous = read_all(fd_);
    }
    if (!previous.empty()) taken_over_ = describe_holder(previous);
    break;
  }
  const nlohmann::json record = {{"command", command},
                                 {"host", this_host()},
                                 {"pid", long(::getpid())},
                                 {"pid_start_ticks", process_start_ticks(::getpid())},
                                 {"since", utc_now()}};
  const std::string text = record.dump() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != ssize_t(text.size()) ||
      ::fsync(fd_) != 0) {
    const int err = errno;
    ::close(fd_);
    throw std::runtime_error(head + "cannot write its lock file " + path_ + " (" + std::strerror(err) + ")");
  }
}

FolderLock::~FolderLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // before the flock goes, so no one takes over a file about to vanish
  ::close(fd_);
}

}  // namespace ff
