// FolderLock in one process: a second holder of the same folder is refused naming this pid and
// host (flock conflicts between two opens of the file even in one process); a released lock
// leaves no file and is taken again with nothing to report; a record whose holder is gone (no
// flock on it) is taken over and named. And the folder kinds claim_output_dir judges by.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "io/folder_lock.h"
#include "io/output_dir.h"
#include "temp_dirs.h"

namespace fs = std::filesystem;
using namespace ff;

namespace {

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

}  // namespace

TEST(FolderLock, ASecondHolderIsRefusedNamingTheFirst) {
  const std::string dir = testkit::temp_dir("lock-second");
  auto first = std::make_unique<FolderLock>(dir, "train", "--out 'x' ");
  EXPECT_TRUE(first->taken_over().empty());
  try {
    FolderLock second(dir, "import", "--out 'x' ");
    FAIL() << "the second lock was granted";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--out 'x' is in use by train, pid " + std::to_string(::getpid()) + " on host " + host_name() +
                     " since "),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("(lock file " + dir + "/.fivefold.lock)"), std::string::npos) << m;
  }
  first.reset();
  EXPECT_FALSE(fs::exists(fs::path(dir) / kFolderLockName)) << "a clean release deletes the file";
  FolderLock again(dir, "import", "--out 'x' ");
  EXPECT_TRUE(again.taken_over().empty()) << again.taken_over();
}

TEST(FolderLock, ARecordWithoutItsFlockIsTakenOverAndNamed) {
  const std::string dir = testkit::temp_dir("lock-stale");
  std::ofstream(fs::path(dir) / kFolderLockName)
      << R"({"command":"train","host":"gone-host","pid":4242,"pid_start_ticks":1,"since":"yesterday"})" << "\n";
  FolderLock lock(dir, "train", "--out 'x' ");
  EXPECT_EQ(lock.taken_over(), "train, pid 4242 on host gone-host since yesterday");
  std::ifstream f(lock.path());
  const std::string record((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(record.find("\"pid\":" + std::to_string(::getpid())), std::string::npos) << record;
}

TEST(FolderKinds, EachKindIsToldByItsFilesAndTokenizersTellNothing) {
  const fs::path dir = testkit::temp_dir("lock-kinds");
  touch(dir / "tokenizer.model");
  touch(dir / "notes.txt");
  EXPECT_TRUE(folder_kinds_in(dir.string()).empty());
  fs::create_directories(dir / "step_12");
  fs::create_directories(dir / "step_x");
  touch(dir / "train-00003.bin");
  touch(dir / "model-00001-of-00002.safetensors");
  const std::vector<FolderKindFound> found = folder_kinds_in(dir.string());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].kind, FolderKind::run);
  EXPECT_EQ(found[0].evidence, std::vector<std::string>{"step_12"});
  EXPECT_EQ(found[1].kind, FolderKind::data);
  EXPECT_EQ(found[1].evidence, std::vector<std::string>{"train-00003.bin"});
  EXPECT_EQ(found[2].kind, FolderKind::export_model);
  EXPECT_EQ(found[2].evidence, std::vector<std::string>{"model-00001-of-00002.safetensors"});
}
