#include "comm/singleton_session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace ff::detail {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "fivefold-mpi-";
constexpr const char* kOwner = ".owner";

// The pid a base's name carries, or -1 for any other name.
long pid_of(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  long pid = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100000000) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

// kill(pid, 0) fails with ESRCH only when no process has that pid (EPERM: one exists, not ours).
bool process_gone(long pid) { return pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

// Whether the tree at dir is a gone singleton's. With `.owner`: true when its lock is free, and
// then `.owner` is unlinked under that lock, so a live owner can never lose it.
bool claim_gone(const fs::path& dir, long pid) {
  const fs::path owner = dir / kOwner;
  const int fd = ::open(owner.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT && process_gone(pid);
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (free) ::unlink(owner.c_str());
  ::close(fd);
  return free;
}

// dir's empty directories, deepest first (a parent after its children), dir itself last.
int remove_empty_dirs(const fs::path& dir) {
  std::vector<fs::path> dirs{dir};
  std::error_code walk;
  for (fs::recursive_directory_iterator it(dir, walk), stop; !walk && it != stop; it.increment(walk))
    if (it->is_directory(walk) && !it->is_symlink(walk)) dirs.push_back(it->path());
  std::stable_sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  int removed = 0;
  std::error_code gone;
  for (const fs::path& d : dirs) removed += fs::remove(d, gone) ? 1 : 0;  // a directory only when empty
  return removed;
}

}  // namespace

const std::string& SingletonSession::open(const std::string& root) {
  release();
  const std::string dir = (fs::path(root) / (kPrefix + std::to_string(::getpid()))).string();
  // Twice: a sweeper that read an old pid off a reused name may remove the new, still empty folder
  // between the mkdir and the open.
  for (int attempt = 0; attempt < 2 && owner_fd_ < 0; ++attempt) {
    ::mkdir(dir.c_str(), 0700);
    owner_fd_ = ::open((dir + "/" + kOwner).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  }
  if (owner_fd_ >= 0 && ::flock(owner_fd_, LOCK_EX | LOCK_NB) == 0) {
    dir_ = dir;
  } else if (owner_fd_ >= 0) {
    ::close(owner_fd_);
    owner_fd_ = -1;
  }
  return dir_;
}

void SingletonSession::release() {
  if (owner_fd_ < 0) return;
  ::unlink((dir_ + "/" + kOwner).c_str());
  ::close(owner_fd_);
  owner_fd_ = -1;
  ::rmdir(dir_.c_str());  // empty once MPI has cleaned up
  dir_.clear();
}

int remove_stale_singleton_sessions(const std::string& root) {
  int removed = 0;
  // Error codes throughout: a folder that cannot be read is skipped, never thrown out of a start.
  std::error_code ec;
  for (fs::directory_iterator at(root, ec), end; !ec && at != end; at.increment(ec)) {
    const fs::directory_entry& top = *at;
    std::error_code kind;
    const long pid = pid_of(top.path().filename().string());
    if (pid < 0 || top.is_symlink(kind) || !top.is_directory(kind) || pid == long(::getpid())) continue;
    if (claim_gone(top.path(), pid)) removed += remove_empty_dirs(top.path());
  }
  return removed;
}

}  // namespace ff::detail
