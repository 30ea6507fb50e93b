// Boxes: the flat-range split that maps a ZeRO chunk onto a tensor or tp block, and the
// set operations behind coverage errors.
#include <gtest/gtest.h>

#include "ckpt/sharded_box.h"

using namespace ff;

TEST(ShardedCheckpointBox, MatrixViewOfShapes) {
  EXPECT_EQ(full_box({10, 6}), (Box{0, 10, 0, 6}));
  EXPECT_EQ(full_box({7}), (Box{0, 1, 0, 7}));  // 1-D tensors are one row
  EXPECT_EQ(full_box({}), (Box{0, 1, 0, 1}));
  EXPECT_EQ(full_box({2, 3, 4}), (Box{0, 6, 0, 4}));
  EXPECT_THROW(full_box({3, -1}), std::invalid_argument);
}

TEST(ShardedCheckpointBox, FlatRangeSplitsIntoAtMostThreeBoxes) {
  const Box b{2, 7, 10, 14};  // a tp block: 5 rows x 4 columns, 20 elements
  // Starts and ends mid-row: partial first row, whole middle rows, partial last row.
  EXPECT_EQ(split_flat_range(b, 3, 17),
            (std::vector<Box>{{2, 3, 13, 14}, {3, 6, 10, 14}, {6, 7, 10, 11}}));
  // Row-aligned ends collapse to one box.
  EXPECT_EQ(split_flat_range(b, 4, 12), (std::vector<Box>{{3, 5, 10, 14}}));
  EXPECT_EQ(split_flat_range(b, 0, 20), (std::vector<Box>{b}));
  // Within one row.
  EXPECT_EQ(split_flat_range(b, 5, 7), (std::vector<Box>{{3, 4, 11, 13}}));
  // Across one row boundary: no middle.
  EXPECT_EQ(split_flat_range(b, 2, 6), (std::vector<Box>{{2, 3, 12, 14}, {3, 4, 10, 12}}));
  // Aligned start, ragged end.
  EXPECT_EQ(split_flat_range(b, 8, 14), (std::vector<Box>{{4, 5, 10, 14}, {5, 6, 10, 12}}));
  EXPECT_TRUE(split_flat_range(b, 9, 9).empty());
  EXPECT_THROW(split_flat_range(b, 3, 21), std::invalid_argument);
  EXPECT_THROW(split_flat_range(b, 5, 4), std::invalid_argument);
}

// Every range of a box splits into boxes whose row-major elements, back to back, are the range.
TEST(ShardedCheckpointBox, FlatRangeSplitIsExactForEveryRange) {
  const Box b{1, 5, 3, 8};  // 4 x 5
  for (int64_t begin = 0; begin <= b.numel(); ++begin)
    for (int64_t end = begin; end <= b.numel(); ++end) {
      std::vector<int64_t> got;
      const auto parts = split_flat_range(b, begin, end);
      EXPECT_LE(parts.size(), 3u);
      for (const Box& p : parts) {
        EXPECT_TRUE(contains(b, p));
        for (int64_t r = p.r0; r < p.r1; ++r)
          for (int64_t c = p.c0; c < p.c1; ++c) got.push_back((r - b.r0) * b.cols() + (c - b.c0));
      }
      std::vector<int64_t> want;
      for (int64_t k = begin; k < end; ++k) want.push_back(k);
      EXPECT_EQ(got, want) << begin << ".." << end;
    }
}

TEST(ShardedCheckpointBox, IntersectAndSubtract) {
  const Box a{0, 4, 0, 6}, b{1, 3, 2, 9};
  EXPECT_EQ(intersect(a, b), (Box{1, 3, 2, 6}));
  EXPECT_TRUE(intersect(a, Box{4, 5, 0, 6}).empty());  // touching edges do not overlap
  const auto rest = subtract(a, b);
  int64_t area = 0;
  for (const Box& r : rest) {
    area += r.numel();
    EXPECT_TRUE(intersect(r, b).empty());
    for (const Box& s : rest)
      if (&s != &r) {
        EXPECT_TRUE(intersect(r, s).empty());
      }
  }
  EXPECT_EQ(area, a.numel() - intersect(a, b).numel());
  EXPECT_EQ(rest.size(), 3u);  // above, below, left (b reaches past a's right edge)
  EXPECT_EQ(subtract(a, Box{5, 6, 0, 1}), (std::vector<Box>{a}));
  EXPECT_TRUE(subtract(a, a).empty());
  EXPECT_EQ(describe(b), "rows [1, 3) x cols [2, 9)");
}
