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

TEST(LrSchedule, StaysAtTheFloorPastItsLength) {
  LrSchedule s{1e-3f, 0.1f, 10, 110};
  for (int step : {111, 150, 1000}) EXPECT_NEAR(s.at(step), 1e-4, 1e-9) << step;
}

// Which length a run's schedule has: a fresh run's steps; on resume the recorded length unless
// lr_schedule_steps names another, and a note whenever the two differ.
TEST(LrSchedule, SpanIsFixedAtTheStartAndChangedOnlyByName) {
  EXPECT_EQ(schedule_span(0, 100, std::nullopt, 1e-4f).steps, 100);
  EXPECT_EQ(schedule_span(0, 100, std::nullopt, 1e-4f).note, "");
  EXPECT_EQ(schedule_span(300, 100, std::nullopt, 1e-4f).steps, 300);
  EXPECT_EQ(schedule_span(0, 100, 100, 1e-4f).note, "");

  const ScheduleSpan longer = schedule_span(0, 150, 100, 1e-4f);
  EXPECT_EQ(longer.steps, 100);
  EXPECT_NE(longer.note.find("steps 101 to 150 train at its floor"), std::string::npos) << longer.note;
  EXPECT_NE(longer.note.find("0.0001"), std::string::npos) << longer.note;
  EXPECT_NE(longer.note.find("lr_schedule_steps = 150"), std::string::npos) << longer.note;

  const ScheduleSpan shorter = schedule_span(0, 80, 100, 1e-4f);
  EXPECT_EQ(shorter.steps, 100);
  EXPECT_NE(shorter.note.find("lr_schedule_steps = 80"), std::string::npos) << shorter.note;

  const ScheduleSpan replanned = schedule_span(150, 150, 100, 1e-4f);
  EXPECT_EQ(replanned.steps, 150);
  EXPECT_NE(replanned.note.find("re-planned"), std::string::npos) << replanned.note;
  EXPECT_EQ(schedule_span(100, 150, 100, 1e-4f).note, "");  // the key names the recorded length
}
