#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "io/tokens/data_loader.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;

namespace {

// Token i has value i, so a row's first input names its window start.
std::shared_ptr<const std::vector<int32_t>> iota_stream(size_t n) {
  auto v = std::make_shared<std::vector<int32_t>>(n);
  std::iota(v->begin(), v->end(), 0);
  return v;
}

struct Batch {
  std::vector<int32_t> x, y;
  bool operator==(const Batch&) const = default;
};

Batch take(DataLoader& dl, int n, int offset, int count) {
  Batch b{std::vector<int32_t>(size_t(count) * dl.seq_len()),
          std::vector<int32_t>(size_t(count) * dl.seq_len())};
  dl.next_batch(n, offset, count, b.x.data(), b.y.data());
  return b;
}

std::vector<int32_t> row_starts(const Batch& b, int seq_len) {
  std::vector<int32_t> s;
  for (size_t r = 0; r < b.x.size() / size_t(seq_len); ++r) s.push_back(b.x[r * size_t(seq_len)]);
  return s;
}

}  // namespace

TEST(DataLoader, WindowCountAndShiftedTargets) {
  DataLoader dl(iota_stream(101), 10, 1);
  EXPECT_EQ(dl.windows_per_epoch(), 10u);  // 100 usable transitions / 10
  DataLoader dl2(iota_stream(100), 10, 1);
  EXPECT_EQ(dl2.windows_per_epoch(), 9u);  // the last window would need token 100
  Batch b = take(dl, 10, 0, 10);
  for (int r = 0; r < 10; ++r) {
    const int32_t s = b.x[size_t(r) * 10];
    EXPECT_EQ(s % 10, 0);
    for (int t = 0; t < 10; ++t) {
      EXPECT_EQ(b.x[size_t(r) * 10 + t], s + t);
      EXPECT_EQ(b.y[size_t(r) * 10 + t], s + t + 1);
    }
  }
}

TEST(DataLoader, EveryWindowExactlyOncePerEpoch) {
  DataLoader dl(iota_stream(1001), 8, 7);
  ASSERT_EQ(dl.windows_per_epoch(), 125u);
  for (int epoch = 0; epoch < 3; ++epoch) {
    // 125 = 5 batches of 25, so each epoch is read whole.
    std::vector<int32_t> starts;
    for (int k = 0; k < 5; ++k) {
      auto s = row_starts(take(dl, 25, 0, 25), 8);
      starts.insert(starts.end(), s.begin(), s.end());
    }
    std::vector<int32_t> sorted = starts;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 125; ++i) ASSERT_EQ(sorted[size_t(i)], i * 8) << "epoch " << epoch;
    // A real shuffle, not the identity.
    int in_place = 0;
    for (int i = 0; i < 125; ++i) in_place += starts[size_t(i)] == i * 8;
    EXPECT_LT(in_place, 10);
    EXPECT_EQ(dl.position().epoch, uint64_t(epoch + 1));
    EXPECT_EQ(dl.position().cursor, 0u);
  }
}

TEST(DataLoader, PinnedOrderForSeed42) {
  // The order is part of the resume contract: a checkpoint taken by one build must continue
  // with the same batches in the next, so the permutation may not drift.
  DataLoader dl(iota_stream(81), 8, 42);
  ASSERT_EQ(dl.windows_per_epoch(), 10u);
  std::vector<uint64_t> order;
  for (uint64_t i = 0; i < 10; ++i) order.push_back(dl.window_at(0, i));
  EXPECT_EQ(order, (std::vector<uint64_t>{9, 3, 7, 4, 6, 8, 2, 1, 5, 0}));
}

TEST(DataLoader, SameSeedSameBatchesDifferentSeedDifferent) {
  DataLoader a(iota_stream(5000), 16, 3), b(iota_stream(5000), 16, 3), c(iota_stream(5000), 16, 4);
  bool any_diff = false;
  for (int k = 0; k < 6; ++k) {
    Batch ba = take(a, 12, 0, 12), bb = take(b, 12, 0, 12), bc = take(c, 12, 0, 12);
    EXPECT_EQ(ba, bb);
    any_diff = any_diff || !(ba == bc);
  }
  EXPECT_TRUE(any_diff);
}

TEST(DataLoader, EpochsHaveDifferentOrders) {
  DataLoader dl(iota_stream(2001), 10, 5);
  std::vector<uint64_t> e0, e1;
  for (uint64_t i = 0; i < dl.windows_per_epoch(); ++i) e0.push_back(dl.window_at(0, i));
  for (uint64_t i = 0; i < dl.windows_per_epoch(); ++i) e1.push_back(dl.window_at(1, i));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, [&] {  // recomputing after eviction gives the same order
    std::vector<uint64_t> again;
    dl.window_at(2, 0);
    dl.window_at(3, 0);
    for (uint64_t i = 0; i < dl.windows_per_epoch(); ++i) again.push_back(dl.window_at(0, i));
    return again;
  }());
}

TEST(DataLoader, BatchCrossingAnEpochContinuesIntoTheNextOrder) {
  DataLoader dl(iota_stream(101), 10, 9);  // 10 windows
  take(dl, 7, 0, 7);
  EXPECT_EQ(dl.position().epoch, 0u);
  EXPECT_EQ(dl.position().cursor, 7u);
  Batch b = take(dl, 7, 0, 7);  // slots 7, 8, 9 of epoch 0, then 0..3 of epoch 1
  std::vector<int32_t> expect;
  for (uint64_t s = 7; s < 10; ++s) expect.push_back(int32_t(dl.window_at(0, s) * 10));
  for (uint64_t s = 0; s < 4; ++s) expect.push_back(int32_t(dl.window_at(1, s) * 10));
  EXPECT_EQ(row_starts(b, 10), expect);
  EXPECT_EQ(dl.position().epoch, 1u);
  EXPECT_EQ(dl.position().cursor, 4u);
  take(dl, 7, 0, 7);
  EXPECT_EQ(dl.position().epoch, 2u);
  EXPECT_EQ(dl.position().cursor, 1u);
  // A batch larger than an epoch spans several epochs.
  take(dl, 25, 0, 25);
  EXPECT_EQ(dl.position().epoch, 4u);
  EXPECT_EQ(dl.position().cursor, 6u);
}

TEST(DataLoader, SetPositionReproducesTheContinuation) {
  DataLoader a(iota_stream(3001), 12, 11);
  for (int k = 0; k < 37; ++k) take(a, 9, 0, 9);  // crosses an epoch (250 windows)
  const DataLoader::Position saved = a.position();
  ASSERT_EQ(a.windows_per_epoch(), 250u);
  EXPECT_EQ(saved.epoch, uint64_t(37 * 9 / 250));
  EXPECT_EQ(saved.cursor, uint64_t(37 * 9 % 250));
  std::vector<Batch> continuation;
  for (int k = 0; k < 40; ++k) continuation.push_back(take(a, 9, 0, 9));

  DataLoader b(iota_stream(3001), 12, 11);
  b.set_position(saved);
  for (int k = 0; k < 40; ++k) ASSERT_EQ(take(b, 9, 0, 9), continuation[size_t(k)]) << k;
  EXPECT_EQ(b.position().epoch, a.position().epoch);
  EXPECT_EQ(b.position().cursor, a.position().cursor);
}

TEST(DataLoader, RankSlicesConcatenateToTheGlobalBatch) {
  const int n = 10, T = 6;
  DataLoader serial(iota_stream(301), T, 21);  // 50 windows: batches straddle epochs
  // Four "ranks" with uneven slices, as when the batch does not divide evenly.
  const int offsets[] = {0, 3, 6, 8}, counts[] = {3, 3, 2, 2};
  std::vector<DataLoader> ranks;
  for (int r = 0; r < 4; ++r) ranks.emplace_back(iota_stream(301), T, 21);
  for (int step = 0; step < 12; ++step) {
    Batch full = take(serial, n, 0, n);
    Batch joined;
    for (int r = 0; r < 4; ++r) {
      Batch part = take(ranks[size_t(r)], n, offsets[r], counts[r]);
      joined.x.insert(joined.x.end(), part.x.begin(), part.x.end());
      joined.y.insert(joined.y.end(), part.y.begin(), part.y.end());
      EXPECT_EQ(ranks[size_t(r)].position().cursor, serial.position().cursor);
    }
    ASSERT_EQ(joined, full) << "step " << step;
  }
}

TEST(DataLoader, ErrorsNameTheFix) {
  expect_error([] { DataLoader(iota_stream(64), 64, 0); },
               {"64 tokens", "needs at least 65", "shorter sequence length"});
  expect_error([] { DataLoader(iota_stream(64), 0, 0); }, {"seq_len must be positive"});
  DataLoader dl(iota_stream(101), 10, 0);
  std::vector<int32_t> x(100), y(100);
  expect_error([&] { dl.next_batch(4, 3, 2, x.data(), y.data()); }, {"rows [3, 5)", "batch of 4"});
  expect_error([&] { dl.set_position({0, 10}); }, {"cursor 10", "10 windows"});
}
