// The table-free window order of large epochs: a bijection for every size, different per key and
// stream, and the DataLoader's order above kMaxTabledWindows.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "io/tokens/data_loader.h"
#include "io/tokens/window_permutation.h"

using namespace ff;

TEST(WindowPermutation, BijectionOfEverySize) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 16ull, 17ull, 1000ull, 4097ull, 65536ull, 100003ull}) {
    std::vector<uint8_t> seen(n, 0);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t j = permute_index(i, n, 77, 3);
      ASSERT_LT(j, n);
      ASSERT_EQ(seen[j], 0) << "n " << n << ": " << j << " reached twice";
      seen[j] = 1;
      fixed += j == i;
    }
    // A shuffle, not the identity: few fixed points (about 1 expected).
    if (n >= 1000) {
      EXPECT_LT(fixed, n / 100) << "n " << n;
    }
  }
}

TEST(WindowPermutation, KeyAndStreamGiveOtherOrders) {
  const uint64_t n = 5000;
  int same_key = 0, same_stream = 0;
  for (uint64_t i = 0; i < n; ++i) {
    same_key += permute_index(i, n, 1, 0) == permute_index(i, n, 2, 0);
    same_stream += permute_index(i, n, 1, 0) == permute_index(i, n, 1, 1);
  }
  EXPECT_LT(same_key, 50);
  EXPECT_LT(same_stream, 50);
}

TEST(WindowPermutation, LargeEpochsVisitEveryWindowOnceWithoutATable) {
  // seq_len 1: one window per token, just past the tabled limit.
  const uint64_t windows = DataLoader::kMaxTabledWindows + 5;
  auto tokens = std::make_shared<std::vector<int32_t>>(windows + 1);
  std::iota(tokens->begin(), tokens->end(), 0);
  DataLoader dl(tokens, 1, 42);
  ASSERT_EQ(dl.windows_per_epoch(), windows);
  std::vector<uint8_t> seen(windows, 0);
  for (uint64_t s = 0; s < windows; ++s) {
    const uint64_t w = dl.window_at(1, s);
    ASSERT_LT(w, windows);
    ASSERT_EQ(seen[w], 0);
    seen[w] = 1;
  }
  int same = 0;  // another epoch, another order
  for (uint64_t s = 0; s < 1000; ++s) same += dl.window_at(0, s) == dl.window_at(1, s);
  EXPECT_LT(same, 10);
}
