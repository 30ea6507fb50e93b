// Run by check_temp_dirs.sh, not registered as tests of its own: a test that makes temporary
// folders (one directly, one through the shared data fixture), and one that fails on purpose once
// it has made a folder (disabled; the script runs it with --gtest_also_run_disabled_tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_data.h"

namespace fs = std::filesystem;
using namespace ff;

TEST(TempDirsProbe, MakesFolders) {
  const std::string dir = testkit::temp_dir("probe");
  std::ofstream(dir + "/note.txt") << "written by the probe\n";
  EXPECT_TRUE(fs::exists(dir + "/note.txt"));
  EXPECT_TRUE(fs::is_directory(testkit::tiny_data_dir()));
}

TEST(TempDirsProbe, DISABLED_FailsOnPurpose) {
  const std::string dir = testkit::temp_dir("probe-failed");
  ADD_FAILURE() << "failing on purpose, so that " << dir << " is kept";
}
