#include "fuzz_util.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ff::fuzz {

namespace {

// Values that break parsers: zero, all ones, sign bits, just past common limits.
constexpr uint64_t kBoundary[] = {0,          1,          0x7F,       0x80,        0xFF,
                                  0x7FFF,     0xFFFF,     0x7FFFFFFF, 0x80000000,  0xFFFFFFFF,
                                  1ull << 32, 1ull << 62, ~0ull >> 1, 1ull << 63,  ~0ull};

void mutate_once(std::string& b, RngState& rng) {
  const uint64_t kind = rng.next_below(7);
  if (b.empty() && kind != 4) return;
  const size_t at = b.empty() ? 0 : size_t(rng.next_below(b.size()));
  switch (kind) {
    case 0:  // one bit
      b[at] = char(uint8_t(b[at]) ^ (1u << rng.next_below(8)));
      break;
    case 1:  // one random byte
      b[at] = char(rng.next_below(256));
      break;
    case 2: {  // a boundary value over a field of 1, 2, 4 or 8 bytes
      const size_t width = size_t(1) << rng.next_below(4);
      const uint64_t v = kBoundary[rng.next_below(std::size(kBoundary))];
      for (size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = char(v >> (8 * i));
      break;
    }
    case 3:  // truncation
      b.resize(at);
      break;
    case 4: {  // appended bytes
      const size_t n = 1 + size_t(rng.next_below(16));
      for (size_t i = 0; i < n; ++i) b.push_back(char(rng.next_below(256)));
      break;
    }
    case 5:  // a span removed
      b.erase(at, size_t(rng.next_below(std::min<size_t>(64, b.size() - at) + 1)));
      break;
    default:  // a span duplicated in place
      b.insert(at, b.substr(at, size_t(rng.next_below(64) + 1)));
      break;
  }
}

}  // namespace

std::string mutate(const std::string& good, RngState& rng) {
  std::string b = good;
  const uint64_t times = 1 + (rng.next_below(4) == 0 ? rng.next_below(4) : 0);
  for (uint64_t i = 0; i < times; ++i) mutate_once(b, rng);
  return b;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

Scratch::Scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Thousands of small rewrites: memory-backed /dev/shm keeps them off a slow disk.
  std::error_code ec;
  const auto base = std::filesystem::is_directory("/dev/shm", ec) ? std::filesystem::path("/dev/shm")
                                                                 : std::filesystem::temp_directory_path();
  const auto dir = base /
                   ("ff_fuzz_" + std::string(info ? info->name() : "x") + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  path_ = dir.string();
}

Scratch::~Scratch() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Outcome run_case(const std::string& path, const std::function<void()>& read) {
  try {
    read();
    return Outcome::accepted;
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "the error does not name the file " << path << ": " << msg;
    return Outcome::refused;
  }
}

}  // namespace ff::fuzz
