// A plain ./fivefold's own Open MPI session folder (comm/singleton_session.h), and the sweep of the
// ones killed runs left: a tree goes when its `.owner` lock is free (or, without one, its pid is
// gone), and then only its empty directories and `.owner`; a held lock keeps a tree whatever its
// pid looks like (another pid namespace), and files, links and other names stay.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
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
fs::path base(const fs::path& root, long pid) { return root / ("fivefold-mpi-" + std::to_string(pid)); }

TEST(SingletonSession, OpenMakesALockedFolderAndReleaseRemovesIt) {
  const fs::path root = ff::testkit::temp_dir("singleton-open");
  ff::detail::SingletonSession s;
  const fs::path dir = s.open(root.string());
  ASSERT_EQ(dir, base(root, ::getpid()));
  ASSERT_TRUE(fs::exists(dir / ".owner"));
  const int fd = ::open((dir / ".owner").c_str(), O_RDWR);
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the owner's lock is not held";
  ::close(fd);
  s.release();
  EXPECT_FALSE(fs::exists(dir));
}

TEST(SingletonSession, TheSweepTakesGoneTreesEmptyPartsAlone) {
  const fs::path root = ff::testkit::temp_dir("singleton-sweep");
  // Gone by pid, no .owner: an empty tree, and one with a file.
  fs::create_directories(base(root, dead_pid(0)) / "jf.0" / "1");
  fs::create_directories(base(root, dead_pid(0)) / "jf.0" / "2");
  fs::create_directories(base(root, dead_pid(1)) / "jf.0" / "empty");
  std::ofstream(base(root, dead_pid(1)) / "jf.0" / "contact.txt") << "kept";
  // A free .owner under pid 1, which is alive: the lock decides, not the pid.
  fs::create_directories(base(root, 1) / "jf.0");
  std::ofstream(base(root, 1) / ".owner");
  // A held .owner under a pid that looks gone (a process in another pid namespace).
  fs::create_directories(base(root, dead_pid(2)) / "jf.0");
  const int held = ::open((base(root, dead_pid(2)) / ".owner").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  // A live pid without .owner (a singleton between its mkdir and its lock), other names, a link.
  fs::create_directories(base(root, ::getppid()) / "jf.0");
  fs::create_directories(root / "fivefold-mpi-x1" / "a");
  fs::create_directories(root / "other" / "b");
  fs::create_directory_symlink(root / "other", base(root, dead_pid(3)));

  // dead_pid(0)'s 4 directories, dead_pid(1)'s empty one, pid 1's 2.
  EXPECT_EQ(ff::detail::remove_stale_singleton_sessions(root.string()), 7);
  EXPECT_FALSE(fs::exists(base(root, dead_pid(0))));
  EXPECT_TRUE(fs::exists(base(root, dead_pid(1)) / "jf.0" / "contact.txt"));
  EXPECT_FALSE(fs::exists(base(root, dead_pid(1)) / "jf.0" / "empty"));
  EXPECT_FALSE(fs::exists(base(root, 1)));
  EXPECT_TRUE(fs::exists(base(root, dead_pid(2)) / "jf.0"));
  EXPECT_TRUE(fs::exists(base(root, dead_pid(2)) / ".owner"));
  EXPECT_TRUE(fs::exists(base(root, ::getppid()) / "jf.0"));
  EXPECT_TRUE(fs::exists(root / "fivefold-mpi-x1" / "a"));
  EXPECT_TRUE(fs::exists(root / "other" / "b"));
  ::close(held);
  // Its lock dropped, that tree goes too; a missing root is no error.
  EXPECT_EQ(ff::detail::remove_stale_singleton_sessions(root.string()), 2);
  EXPECT_FALSE(fs::exists(base(root, dead_pid(2))));
  EXPECT_EQ(ff::detail::remove_stale_singleton_sessions((root / "missing").string()), 0);
}

}  // namespace
