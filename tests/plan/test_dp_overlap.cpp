// The exposed part of data-parallel communication: the link's queue worked by hand.
#include <gtest/gtest.h>

#include <vector>

#include "plan/dp_overlap.h"

namespace {
using ff::SegmentComm;

// Embedding (no compute), one block and the head, each half the compute; 1 s per all-reduce.
std::vector<SegmentComm> three(double each) {
  return {{0.0, each, each, each}, {0.5, each, each, each}, {0.5, each, each, each}};
}

TEST(DpOverlap, DdpHidesWhatTheRestOfBackwardCovers) {
  // Backward 10 s: the head's gradient at 5 (link to 6), the block's at 10 (to 11), the embedding's
  // at 10 queues behind it (to 12): 2 s after backward.
  EXPECT_DOUBLE_EQ(ff::ddp_exposed(three(1.0), 10.0), 2.0);
  // 4 s each: the head's ends at 9, the block's at 14, the embedding's at 18.
  EXPECT_DOUBLE_EQ(ff::ddp_exposed(three(4.0), 10.0), 8.0);
  // No backward to hide behind: all of it.
  EXPECT_DOUBLE_EQ(ff::ddp_exposed(three(1.0), 0.0), 3.0);
  EXPECT_DOUBLE_EQ(ff::ddp_exposed({}, 10.0), 0.0);
}

TEST(DpOverlap, ZeroGathersOneSegmentAheadAndReduceScattersBehindBackward) {
  // Two segments of half the compute, 1 s per gather and per reduce-scatter, forward 10 s,
  // backward 20 s. Forward: gather 0 ends at 1, segment 0 computes 1..6 while 1 is gathered
  // (to 2), segment 1 computes 6..11. Backward: segment 1 gathered again 11..12, computes 12..22
  // while 0 is gathered (12..13); its reduce-scatter 22..23; segment 0 computes 22..32, its
  // reduce-scatter 32..33. The step's compute is 30 s: 3 s exposed.
  const std::vector<SegmentComm> two = {{0.5, 0, 1, 1}, {0.5, 0, 1, 1}};
  EXPECT_DOUBLE_EQ(ff::zero_exposed(two, 10.0, 20.0, true, true), 3.0);
  // Reduce-scatters alone (ZeRO-2): the first hides behind segment 0's backward (20..21), the
  // last follows the backward: 1 s.
  EXPECT_DOUBLE_EQ(ff::zero_exposed(two, 10.0, 20.0, false, true), 1.0);
  // A link slower than compute: gathers of 8 s. Forward: gather 0 to 8, compute 8..13, gather 1
  // 8..16, compute 16..21; gather 1 again 21..29, compute 29..39 while 0 is gathered 29..37;
  // reduce-scatter 1 at 39..47 (after gather 0), compute 0 39..49, reduce-scatter 0 49..57.
  const std::vector<SegmentComm> slow = {{0.5, 0, 8, 8}, {0.5, 0, 8, 8}};
  EXPECT_DOUBLE_EQ(ff::zero_exposed(slow, 10.0, 20.0, true, true), 27.0);
}

}  // namespace
