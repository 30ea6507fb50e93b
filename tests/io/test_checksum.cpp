#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "io/checksum.h"

using ff::checksum64;

// Pinned values: files written by earlier builds must keep validating, so the function may
// never change silently.
TEST(Checksum, PinnedValues) {
  EXPECT_EQ(checksum64("", 0), 0xac0aab36b37682c5ull);
  EXPECT_EQ(checksum64("fivefold", 8), 0x7d17bfd845647d6eull);
  const std::string gen = "In the beginning God created the heaven and the earth.";
  EXPECT_EQ(checksum64(gen.data(), gen.size()), 0xa5881cb78dcc6297ull);
}

TEST(Checksum, EverySingleBitFlipIsDetected) {
  // 1001 bytes exercise the 32-byte lanes, the 8-byte tail and the partial last word.
  std::vector<unsigned char> buf(1001);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 37 + 11);
  const uint64_t base = checksum64(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      buf[i] ^= static_cast<unsigned char>(1u << bit);
      ASSERT_NE(checksum64(buf.data(), buf.size()), base) << "byte " << i << " bit " << bit;
      buf[i] ^= static_cast<unsigned char>(1u << bit);
    }
  }
}

TEST(Checksum, LengthMattersEvenForZeroBytes) {
  std::vector<unsigned char> zeros(64, 0);
  for (size_t n = 0; n < 64; ++n) {
    EXPECT_NE(checksum64(zeros.data(), n), checksum64(zeros.data(), n + 1)) << n;
  }
}

TEST(Checksum, SwappedWordsDiffer) {
  uint64_t a[2] = {1, 2}, b[2] = {2, 1};
  EXPECT_NE(checksum64(a, 16), checksum64(b, 16));
}

TEST(Checksum, FiftyMegabytesIsFast) {
  std::vector<unsigned char> buf(50u << 20, 7);
  auto t0 = std::chrono::steady_clock::now();
  volatile uint64_t h = checksum64(buf.data(), buf.size());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)h;
  // About 15 ms on the 2-core dev box; the bound leaves room for a busy shared machine.
  EXPECT_LT(s, 0.5);
}
