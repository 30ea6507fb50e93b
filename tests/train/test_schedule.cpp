#include <gtest/gtest.h>

#include <cmath>

#include "train/lr_schedule.h"

using namespace ff;

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
  LrSchedule s{1e-3f, 0.1f, 10, 110};
  EXPECT_FLOAT_EQ(s.at(1), 1e-4f);
  EXPECT_FLOAT_EQ(s.at(10), 1e-3f);
  // Halfway through the decay the cosine is at its midpoint: floor + (peak - floor) / 2.
  EXPECT_NEAR(s.at(60), 1e-4 + 0.5 * 9e-4, 1e-9);
  EXPECT_NEAR(s.at(110), 1e-4, 1e-9);
  for (int i = 11; i < 110; ++i) EXPECT_GE(s.at(i), s.at(i + 1));
}
