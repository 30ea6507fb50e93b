#pragma once
// Shared by the fuzz loops: seeded damage to a file's bytes, and the one rule every outcome must
// follow: success, or a std::exception whose message names the file. A crash or a hang fails the
// test binary (ctest's timeout), so neither needs catching here.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/rng.h"

namespace ff::fuzz {

// One damaged copy of good: flipped bits, boundary values over a 1-, 2-, 4- or 8-byte field,
// truncation, appended bytes, or a span removed or duplicated. Several at once sometimes.
std::string mutate(const std::string& good, RngState& rng);

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);
// A fresh folder named after the running test, removed with the object.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

enum class Outcome { accepted, refused };
// Runs read(); an exception must name `path` or the test fails.
Outcome run_case(const std::string& path, const std::function<void()>& read);

}  // namespace ff::fuzz
