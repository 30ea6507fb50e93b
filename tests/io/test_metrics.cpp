#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io/metrics.h"
#include "io_test_util.h"

using namespace ff;

namespace {

std::vector<nlohmann::json> records(const std::string& path) {
  std::istringstream in(ff::testing::read_all(path));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST(Metrics, OneFlushedLinePerRecord) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("metrics.jsonl");
  MetricsWriter m(p, false);
  m.write({{"step", 1}, {"loss", 4.5}, {"sample", "line one\nline two"}});
  // Readable while the writer is still open: the record was flushed.
  auto r = records(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["step"], 1);
  EXPECT_EQ(r[0]["sample"], "line one\nline two");
  m.write({{"step", 2}, {"loss", 4.25}});
  r = records(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[1]["loss"].get<double>(), 4.25);
}

TEST(Metrics, AppendContinuesTruncateRestarts) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("metrics.jsonl");
  { MetricsWriter(p, false).write({{"step", 1}}); }
  { MetricsWriter(p, true).write({{"step", 2}}); }
  auto r = records(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1]["step"], 2);
  { MetricsWriter(p, false).write({{"step", 9}}); }
  r = records(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["step"], 9);
}

TEST(Metrics, InvalidUtf8DoesNotThrow) {
  ff::testing::TempDir dir;
  MetricsWriter m(dir.file("m.jsonl"), false);
  EXPECT_NO_THROW(m.write({{"sample", std::string("bad \xff byte")}}));
  EXPECT_EQ(records(dir.file("m.jsonl")).size(), 1u);
}

TEST(Metrics, UnwritablePathIsExplained) {
  ff::testing::expect_error([] { MetricsWriter m("/nonexistent/dir/metrics.jsonl", true); },
                            {"/nonexistent/dir/metrics.jsonl", "directory exists"});
}

// A torn last line (full disk, crash) used to stay and the resumed run appended after it, leaving
// an unparseable line in the middle of the file.
TEST(Metrics, ResumeDropsATornLastLine) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("metrics.jsonl");
  const std::string good = "{\"step\":1}\n{\"step\":2}\n";
  using namespace std::string_literals;  // the second torn line holds NUL bytes
  for (const std::string& torn : {"{\"step\":3,\"lo"s, "{\"step\":3}\0\0\0\n"s}) {
    ff::testing::write_all(p, good + torn);
    MetricsWriter m(p, true);
    EXPECT_EQ(m.dropped_bytes(), torn.size());
    m.write({{"step", 3}});
    const auto r = records(p);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[2]["step"], 3);
    EXPECT_EQ(ff::testing::read_all(p), good + "{\"step\":3}\n");
  }
  // A file that ends cleanly keeps every byte; a single torn line leaves an empty file.
  ff::testing::write_all(p, good);
  EXPECT_EQ(MetricsWriter(p, true).dropped_bytes(), 0u);
  EXPECT_EQ(ff::testing::read_all(p), good);
  ff::testing::write_all(p, "{\"st");
  EXPECT_EQ(MetricsWriter(p, true).dropped_bytes(), 4u);
  EXPECT_EQ(ff::testing::read_all(p), "");
}

TEST(Metrics, AFullDiskLeavesNoPartialLine) {
  // /dev/full fails every write with ENOSPC, as a full disk does.
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  MetricsWriter m("/dev/full", false);
  ff::testing::expect_error([&] { m.write({{"step", 1}}); }, {"/dev/full", "free disk space"});
}

// A run killed after its last checkpoint has logged steps it repeats on resume, so they used to
// appear twice. Resuming at step 2 drops the records of later steps (and a torn line), keeps
// event rows (the supervisor's restarts) and every earlier record byte for byte.
TEST(Metrics, ResumeDropsTheStepsAfterTheCheckpoint) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("metrics.jsonl");
  const std::string kept = "{\"step\":1}\n{\"step\":2,\"loss\":3.5}\n{\"event\":\"restart\",\"attempt\":1}\n";
  ff::testing::write_all(p, "{\"step\":1}\n{\"step\":2,\"loss\":3.5}\n{\"step\":3}\n"
                            "{\"event\":\"restart\",\"attempt\":1}\n{\"step\":4}\n{\"step\":5,\"lo");
  MetricsWriter m(p, true, 2);
  EXPECT_EQ(m.dropped_steps(), 2);
  EXPECT_EQ(ff::testing::read_all(p), kept);
  m.write({{"step", 3}});
  EXPECT_EQ(ff::testing::read_all(p), kept + "{\"step\":3}\n");
  // Nothing after the resumed step: the file is not rewritten.
  EXPECT_EQ(MetricsWriter(p, true, 3).dropped_steps(), 0);
}

// The supervisor's restart rows carry the step the failed attempt reached, which is after the
// checkpoint the job resumes from: they are events, not steps, so resuming keeps them, and the
// last logged step passes over them (and over a torn last line).
TEST(Metrics, RestartRowsWithAStepAreKeptAndAreNotSteps) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("metrics.jsonl");
  EXPECT_EQ(last_logged_step(p), 0) << "no file: no step";
  ff::testing::write_all(p, "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"event\":\"restart\",\"step\":3}\n");
  EXPECT_EQ(last_logged_step(p), 3);
  ff::testing::write_all(p, "{\"step\":1}\n{\"step\":2}\n{\"event\":\"restart\",\"step\":9}\n{\"step\":4,\"lo");
  EXPECT_EQ(last_logged_step(p), 2) << "the restart row's step and the torn line are not step records";
  ff::testing::write_all(p, "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"event\":\"restart\",\"step\":3}\n");
  MetricsWriter m(p, true, 2);
  EXPECT_EQ(m.dropped_steps(), 1);
  EXPECT_EQ(ff::testing::read_all(p), "{\"step\":1}\n{\"step\":2}\n{\"event\":\"restart\",\"step\":3}\n");
}
