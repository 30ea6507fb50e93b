// Sub-communicators made by split.
#include <gtest/gtest.h>

#include <numeric>

#include "mpi_test_util.h"

using namespace ff;
using ff::test::world;

TEST(Split, ByParityWithReversedKeys) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  Comm sub = w.split(r % 2, -r);  // larger world rank first
  std::vector<int> expected;
  for (int q = p - 1; q >= 0; --q) if (q % 2 == r % 2) expected.push_back(q);
  EXPECT_EQ(sub.world_ranks(), expected);
  EXPECT_EQ(sub.size(), int(expected.size()));
  EXPECT_EQ(sub.world_ranks()[size_t(sub.rank())], r);
  // A collective inside each half sees only that half.
  int64_t sum = r;
  sub.all_reduce(&sum, 1);
  EXPECT_EQ(sum, std::accumulate(expected.begin(), expected.end(), int64_t(0)));
  // Nested split: everyone alone.
  Comm single = sub.split(sub.rank(), 0);
  EXPECT_EQ(single.size(), 1);
  float x = 3;
  single.all_reduce(&x, 1);
  EXPECT_EQ(x, 3.f);
}

TEST(Split, SubgroupTrafficDoesNotMixWithWorldTraffic) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  Comm sub = w.split(0, r);  // same members as the world, a separate communicator
  std::vector<float> a(50001), b(50001);
  for (size_t i = 0; i < a.size(); ++i) { a[i] = test::input<float>(r, i); b[i] = test::input<float>(r, i + 5); }
  CommRequest ra = w.all_reduce_async(a.data(), a.size());
  CommRequest rb = sub.all_reduce_async(b.data(), b.size());
  rb.wait();
  ra.wait();
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bad += a[i] != test::expected_sum<float>(p, i);
    bad += b[i] != test::expected_sum<float>(p, i + 5);
  }
  EXPECT_EQ(bad, 0u);
}
