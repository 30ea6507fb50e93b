#include <gtest/gtest.h>

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
