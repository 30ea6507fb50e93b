#include "temp_dirs.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

namespace ff::testkit {

namespace fs = std::filesystem;

namespace {

// The folders this process made, removed by its static destructors (after main returns, so after
// an MPI program's finalize: every rank is done with a folder rank 0 shared). Only the process
// that made a folder removes it: a forked child that exits does not take its parent's folders.
class TempDirRegistry {
 public:
  std::string make(const std::string& tag) {
    std::lock_guard lock(mutex_);
    const fs::path p = fs::temp_directory_path() / ("fivefold-test-" + tag + "-" + std::to_string(owner_) + "-" +
                                                    std::to_string(dirs_.size()));
    fs::remove_all(p);
    fs::create_directories(p);
    dirs_.push_back(p);
    return p.string();
  }
  void keep(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (kept_because_.empty()) kept_because_ = why;
  }
  ~TempDirRegistry() {
    if (::getpid() != owner_ || dirs_.empty()) return;
    if (!kept_because_.empty()) {
      std::fprintf(stderr, "kept %zu temporary folder(s) (%s):\n", dirs_.size(), kept_because_.c_str());
      for (const fs::path& p : dirs_) std::fprintf(stderr, "  %s\n", p.c_str());
      return;
    }
    std::error_code ignored;  // a folder a test removed itself is no error
    for (const fs::path& p : dirs_) fs::remove_all(p, ignored);
  }

 private:
  std::mutex mutex_;
  const pid_t owner_ = ::getpid();
  std::vector<fs::path> dirs_;
  std::string kept_because_ = keep_requested() ? "FIVEFOLD_KEEP_TEST_DIRS=1" : "";

  static bool keep_requested() {
    const char* v = std::getenv("FIVEFOLD_KEEP_TEST_DIRS");
    return v && std::strcmp(v, "1") == 0;
  }
};

TempDirRegistry& registry() {
  static TempDirRegistry r;
  return r;
}

}  // namespace

std::string temp_dir(const std::string& tag) { return registry().make(tag); }

void keep_temp_dirs(const std::string& why) { registry().keep(why); }

}  // namespace ff::testkit
