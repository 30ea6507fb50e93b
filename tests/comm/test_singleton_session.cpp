// The sweep of killed singletons' Open MPI session bases (comm/singleton_session.h): only empty
// directories of trees whose process is gone go; files, live processes' trees, symbolic links and
// other names stay.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "comm/singleton_session.h"
#include "temp_dirs.h"

namespace {

namespace fs = std::filesystem;

// A pid no process can have: above the kernel's largest.
long dead_pid(int k) {
  long max = 4194304;
  std::ifstream("/proc/sys/kernel/pid_max") >> max;
  return max + 1 + k;
}

TEST(SingletonSession, TheEmptyTreesOfGoneProcessesAloneAreRemoved) {
  const fs::path root = ff::testkit::temp_dir("singleton-sweep");
  const fs::path gone_empty = ff::detail::singleton_session_dir(root, dead_pid(0));
  const fs::path gone_with_file = ff::detail::singleton_session_dir(root, dead_pid(1));
  const fs::path live = ff::detail::singleton_session_dir(root, ::getpid());
  fs::create_directories(gone_empty / "jf.0" / "1");
  fs::create_directories(gone_empty / "jf.0" / "2");
  fs::create_directories(gone_with_file / "jf.0" / "empty");
  std::ofstream(gone_with_file / "jf.0" / "contact.txt") << "kept";
  fs::create_directories(live / "jf.0");
  fs::create_directories(root / "fivefold-mpi-x1" / "a");  // not a pid
  fs::create_directories(root / "other" / "b");
  fs::create_symlink(root / "other", root / ("fivefold-mpi-" + std::to_string(dead_pid(2))));

  // gone_empty's 4 directories, and gone_with_file's empty one.
  EXPECT_EQ(ff::detail::remove_stale_singleton_sessions(root), 5);
  EXPECT_FALSE(fs::exists(gone_empty));
  EXPECT_TRUE(fs::exists(gone_with_file / "jf.0" / "contact.txt"));
  EXPECT_FALSE(fs::exists(gone_with_file / "jf.0" / "empty"));
  EXPECT_TRUE(fs::exists(live / "jf.0"));
  EXPECT_TRUE(fs::exists(root / "fivefold-mpi-x1" / "a"));
  EXPECT_TRUE(fs::exists(root / "other" / "b"));  // the link's target
  EXPECT_EQ(ff::detail::remove_stale_singleton_sessions(root / "missing"), 0);  // no root: nothing, no throw
}

}  // namespace
