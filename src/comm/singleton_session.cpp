#include "comm/singleton_session.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace ff::detail {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "fivefold-mpi-";

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

}  // namespace

std::string singleton_session_dir(const std::string& root, long pid) {
  return (fs::path(root) / (kPrefix + std::to_string(pid))).string();
}

int remove_stale_singleton_sessions(const std::string& root) {
  std::error_code ec;
  int removed = 0;
  // Iterated with error codes throughout: a folder that cannot be read is skipped, never thrown
  // out of a run's start.
  for (fs::directory_iterator at(root, ec), end; !ec && at != end; at.increment(ec)) {
    const fs::directory_entry& top = *at;
    if (!process_gone(pid_of(top.path().filename().string())) || !top.is_directory(ec) || top.is_symlink(ec))
      continue;
    // Deepest first, so a parent is tried after its children; fs::remove takes a directory only
    // when it is empty, and a file is never offered to it.
    std::vector<fs::path> dirs{top.path()};
    std::error_code walk;
    for (fs::recursive_directory_iterator it(top.path(), walk), stop; !walk && it != stop; it.increment(walk))
      if (it->is_directory(walk) && !it->is_symlink(walk)) dirs.push_back(it->path());
    std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
      return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
    });
    std::error_code gone;
    for (const fs::path& d : dirs) removed += fs::remove(d, gone) ? 1 : 0;
    ec.clear();
  }
  return removed;
}

}  // namespace ff::detail
