// Linked into every GoogleTest program (ff_test): a failed test keeps the program's temporary
// folders (temp_dirs.h), so what it left can be inspected.
#include <gtest/gtest.h>

#include "temp_dirs.h"

namespace {

class KeepTempDirsOnFailure : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (test.result()->Failed())
      ff::testkit::keep_temp_dirs(std::string(test.test_suite_name()) + "." + test.name() + " failed");
  }
};

// Registered before main: gtest_main's InitGoogleTest keeps listeners appended earlier.
const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new KeepTempDirsOnFailure);
  return true;
}();

}  // namespace
