#pragma once
// Shared by the io tests: a private scratch directory per test, byte-level file surgery to
// simulate damage, and an assertion that an error message carries the words a user needs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "temp_dirs.h"

namespace ff::testing {

// A fresh folder named after the running test, removed at exit like every testkit::temp_dir (kept
// with FIVEFOLD_KEEP_TEST_DIRS=1 or after a failure, for a look at what the test wrote).
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = testkit::temp_dir(std::string("io-") + (info ? info->name() : "suite"));
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// n ids below mod, spread over the range (7919 is prime), for shards whose content matters.
inline std::vector<int32_t> ramp(size_t n, int32_t mod) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int32_t((i * 7919) % size_t(mod));
  return v;
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline void flip_byte(const std::string& path, size_t offset) {
  std::string b = read_all(path);
  ASSERT_LT(offset, b.size());
  b[offset] = char(b[offset] ^ 0x5A);
  write_all(path, b);
}

inline void truncate_to(const std::string& path, size_t bytes) {
  std::filesystem::resize_file(path, bytes);
}

// Fails unless fn throws std::runtime_error whose message contains every word.
inline void expect_error(const std::function<void()>& fn,
                         std::initializer_list<std::string> words) {
  try {
    fn();
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const auto& w : words)
      EXPECT_NE(msg.find(w), std::string::npos) << "missing \"" << w << "\" in: " << msg;
    return;
  }
  ADD_FAILURE() << "expected a std::runtime_error";
}

}  // namespace ff::testing
