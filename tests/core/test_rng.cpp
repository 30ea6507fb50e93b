#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"

using namespace ff;

// Philox4x32-10 known-answer vectors from the Random123 distribution (kat_vectors):
// counter = 0, key = 0 and counter = all ones, key = all ones.
TEST(Philox, KnownAnswers) {
  uint32_t r[4];
  Philox::block(0, 0, 0, r);
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
  Philox::block(~0ull, ~0ull, ~0ull, r);
  EXPECT_EQ(r[0], 0x408f276du);
  EXPECT_EQ(r[1], 0x41c83b0eu);
  EXPECT_EQ(r[2], 0xa20bc7c6u);
  EXPECT_EQ(r[3], 0x6d5451fdu);
}

TEST(Philox, NormalMomentsAreStandard) {
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = normal01(42, 7, uint64_t(i));
    sum += x;
    sq += x * x;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
}

TEST(RngState, SameSeedSameStreamDifferentSeedDifferent) {
  RngState a{5, 0}, b{5, 0}, c{6, 0};
  int diffs = 0;
  for (int i = 0; i < 100; ++i) {
    uint32_t x = a.next_u32();
    EXPECT_EQ(x, b.next_u32());
    diffs += x != c.next_u32();
  }
  EXPECT_GT(diffs, 95);
}
