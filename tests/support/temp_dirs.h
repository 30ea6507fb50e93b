#pragma once
// Temporary folders for tests, removed when the process that made them exits normally (each MPI
// rank removes only its own). FIVEFOLD_KEEP_TEST_DIRS=1 keeps them, and a GoogleTest program with a
// failed test keeps them too (keep_on_failure.cpp); either way the paths are printed at exit.
#include <string>

namespace ff::testkit {

// A fresh empty folder $TMPDIR/fivefold-test-<tag>-<pid>-<n>.
std::string temp_dir(const std::string& tag);
// Keeps this process's temporary folders at exit, printing them with `why`.
void keep_temp_dirs(const std::string& why);

}  // namespace ff::testkit
