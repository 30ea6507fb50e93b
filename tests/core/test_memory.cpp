#include <gtest/gtest.h>

#include "core/memory.h"

using namespace ff;

TEST(MemoryLedger, TracksCurrentAndPeakPerCategory) {
  auto& L = MemoryLedger::instance();
  auto before = L.snapshot();
  {
    TrackedBuffer<float> a(1000, MemCategory::activations);
    TrackedBuffer<double> b(10, MemCategory::optimizer);
    auto mid = L.snapshot();
    EXPECT_EQ(mid.current[int(MemCategory::activations)] - before.current[int(MemCategory::activations)], 4000);
    EXPECT_EQ(mid.current[int(MemCategory::optimizer)] - before.current[int(MemCategory::optimizer)], 80);
  }
  auto after = L.snapshot();
  EXPECT_EQ(after.current, before.current);
  EXPECT_GE(after.peak[int(MemCategory::activations)], 4000);
}
