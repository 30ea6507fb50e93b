// Weighted mixtures of token streams: the deficit schedule against an exact integer version of the
// rule, its proportions and bound, and the MixtureLoader's rows, resume and rank slices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "io/tokens/data_folder.h"
#include "io/tokens/data_loader.h"
#include "io/tokens/mixture_loader.h"
#include "io/tokens/mixture_schedule.h"
#include "io/tokens/token_shard.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;
using ff::testing::TempDir;

namespace {

// The rule in exact integer arithmetic for integer weights a_i (share a_i / S): row g goes to
// argmax_i (a_i * (g + 1) - count_i * S), ties to the lowest index.
std::vector<size_t> exact_schedule(const std::vector<int64_t>& a, int64_t rows) {
  const int64_t S = std::accumulate(a.begin(), a.end(), int64_t(0));
  std::vector<int64_t> count(a.size(), 0);
  std::vector<size_t> out;
  for (int64_t g = 0; g < rows; ++g) {
    size_t best = 0;
    for (size_t i = 1; i < a.size(); ++i)
      if (a[i] * (g + 1) - count[i] * S > a[best] * (g + 1) - count[best] * S) best = i;
    ++count[best];
    out.push_back(best);
  }
  return out;
}

std::vector<double> as_double(const std::vector<int64_t>& a) { return {a.begin(), a.end()}; }

// {5, 7}, {5, 9} and {7, 3} tie in exact arithmetic where w * (g + 1) rounds one side up (rows 53,
// 20 and 44): a plain floating-point comparison breaks those ties the wrong way.
const std::vector<std::vector<int64_t>> kWeightSets = {{3, 7},       {1, 1}, {5, 2, 3}, {1, 2, 3, 4}, {1, 98, 1},
                                                       {13, 29, 58}, {5, 7}, {5, 9},    {7, 3}};

// Tokens [base, base + n): a row's first input tells which stream and window it came from.
std::shared_ptr<const TokenStream> ramp_from(int32_t base, size_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), base);
  return tokens_in_memory(std::move(v));
}

struct Rows {
  std::vector<int32_t> x, y;
  uint64_t targets = 0;
};

Rows take(MixtureLoader& m, int n, int offset, int count, int T) {
  Rows r{std::vector<int32_t>(size_t(count) * T), std::vector<int32_t>(size_t(count) * T)};
  r.targets = m.next_batch(n, offset, count, r.x.data(), r.y.data());
  return r;
}

}  // namespace

TEST(MixtureSchedule, EqualsTheExactIntegerRule) {
  for (const auto& a : kWeightSets) {
    MixtureSchedule s(as_double(a));
    const std::vector<size_t> want = exact_schedule(a, 10000);
    for (size_t g = 0; g < want.size(); ++g) ASSERT_EQ(s.next(), want[g]) << "row " << g << ", weights " << a.size();
  }
}

TEST(MixtureSchedule, ProportionsWithinOnePercentAndOneSequenceAtEveryRow) {
  for (const auto& a : kWeightSets) {
    const double S = double(std::accumulate(a.begin(), a.end(), int64_t(0)));
    MixtureSchedule s(as_double(a));
    std::vector<double> count(a.size(), 0);
    double worst = 0;
    for (int g = 1; g <= 10000; ++g) {
      ++count[s.next()];
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(count[i] - double(a[i]) / S * g));
    }
    // Every folder stays within one sequence of its share at every point of the run.
    EXPECT_LT(worst, 1.0) << a.size() << " weights";
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(count[i] / 10000, double(a[i]) / S, 0.01);
  }
}

TEST(MixtureSchedule, ResetReplaysToTheSameState) {
  MixtureSchedule a({0.2, 0.5, 0.3}), b({0.2, 0.5, 0.3});
  for (int i = 0; i < 777; ++i) a.next();
  b.reset(777);
  EXPECT_EQ(a.counts(), b.counts());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(MixtureLoader, OneSourceIsThePlainDataLoader) {
  const int T = 8;
  auto stream = ramp_from(0, 300);
  DataLoader plain(stream, T, 42);
  MixtureLoader mix({{stream, 1.0}}, T, 42);
  EXPECT_EQ(mix.windows_per_epoch(), plain.windows_per_epoch());
  std::vector<int32_t> px(5 * T), py(5 * T);
  for (int b = 0; b < 20; ++b) {  // 100 rows: several epochs of 37 windows
    const Rows m = take(mix, 5, 0, 5, T);
    EXPECT_EQ(m.targets, plain.next_batch(5, 0, 5, px.data(), py.data()));
    ASSERT_EQ(m.x, px) << "batch " << b;
    ASSERT_EQ(m.y, py);
    EXPECT_EQ(mix.position().epoch, plain.position().epoch);
    EXPECT_EQ(mix.position().cursor, plain.position().cursor);
  }
}

TEST(MixtureLoader, RowsFollowTheScheduleAndEachSourcesOwnOrder) {
  const int T = 4;
  // Source 0 holds ids [0, 101), source 1 ids [1000, 1061): a row's first id names its source.
  auto s0 = ramp_from(0, 101), s1 = ramp_from(1000, 61);
  MixtureLoader mix({{s0, 3}, {s1, 7}}, T, 9);
  // Each source on its own: a DataLoader with the source's seed, read one row at a time.
  DataLoader d0(s0, T, mixture_source_seed(9, 0)), d1(s1, T, mixture_source_seed(9, 1));
  const std::vector<size_t> want = exact_schedule({3, 7}, 400);
  std::vector<int32_t> x(T), y(T);
  for (int b = 0; b < 50; ++b) {
    const Rows r = take(mix, 8, 0, 8, T);
    for (int row = 0; row < 8; ++row) {
      const size_t g = size_t(b * 8 + row);
      const int32_t first = r.x[size_t(row) * T];
      ASSERT_EQ(first >= 1000 ? 1u : 0u, want[g]) << "row " << g;
      (want[g] ? d1 : d0).next_batch(1, 0, 1, x.data(), y.data());
      ASSERT_EQ(std::vector<int32_t>(r.x.begin() + row * T, r.x.begin() + (row + 1) * T), x) << "row " << g;
      ASSERT_EQ(std::vector<int32_t>(r.y.begin() + row * T, r.y.begin() + (row + 1) * T), y) << "row " << g;
    }
  }
  EXPECT_EQ(mix.rows_per_source()[0], 120u);
  EXPECT_EQ(mix.rows_per_source()[1], 280u);
  EXPECT_EQ(mix.windows_per_epoch(), 25u + 15u);
}

TEST(MixtureLoader, SetPositionAndRankSlicesReproduceTheRun) {
  const int T = 4, n = 6;
  auto s0 = ramp_from(0, 81), s1 = ramp_from(500, 41), s2 = ramp_from(900, 121);
  const std::vector<MixtureSource> sources = {{s0, 0.5}, {s1, 0.2}, {s2, 0.3}};
  MixtureLoader straight(sources, T, 3);
  std::vector<Rows> all;
  for (int b = 0; b < 30; ++b) all.push_back(take(straight, n, 0, n, T));

  MixtureLoader first(sources, T, 3);
  for (int b = 0; b < 13; ++b) take(first, n, 0, n, T);
  MixtureLoader resumed(sources, T, 3);
  resumed.set_position(first.position());
  EXPECT_EQ(resumed.rows_per_source(), first.rows_per_source());
  for (int b = 13; b < 30; ++b) {
    // Two ranks, rows [0, 2) and [2, 6), together give the global batch.
    MixtureLoader& r = resumed;
    const Rows lo = take(r, n, 0, 2, T);
    MixtureLoader hi_loader(sources, T, 3);
    hi_loader.set_position(DataLoader::Position{(uint64_t(b) * n) / r.windows_per_epoch(),
                                                (uint64_t(b) * n) % r.windows_per_epoch()});
    const Rows hi = take(hi_loader, n, 2, 4, T);
    std::vector<int32_t> x = lo.x;
    x.insert(x.end(), hi.x.begin(), hi.x.end());
    ASSERT_EQ(x, all[size_t(b)].x) << "batch " << b;
    EXPECT_EQ(lo.targets, all[size_t(b)].targets);
    EXPECT_EQ(hi.targets, all[size_t(b)].targets);
  }
  expect_error([&] { resumed.set_position({0, resumed.windows_per_epoch()}); }, {"cursor", "same data"});
}

TEST(MixtureLoader, LossMaskCountsTheWholeGlobalBatch) {
  const int T = 4;
  std::vector<int32_t> ids(41);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<uint8_t> mask(41);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = uint8_t(i % 3 != 0);  // every third token no target
  auto masked = tokens_in_memory(ids, mask);
  auto plain = ramp_from(100, 41);
  MixtureLoader mix({{masked, 1}, {plain, 1}}, T, 5);
  const Rows r = take(mix, 4, 1, 2, T);  // this rank holds rows 1 and 2 of 4
  // Independently: rows alternate masked, plain, masked, plain (equal weights, ties to 0).
  DataLoader dm(masked, T, mixture_source_seed(5, 0));
  uint64_t want = 0;
  std::vector<int32_t> x(T), y(T);
  for (int i = 0; i < 2; ++i) {
    dm.next_batch(1, 0, 1, x.data(), y.data());
    for (int t = 0; t < T; ++t) want += (x[size_t(t)] + 1) % 3 != 0;  // target x+1 is masked when (x+1) % 3 == 0
  }
  want += 2 * T;
  EXPECT_EQ(r.targets, want);
  for (int t = 0; t < T; ++t)  // row 1 comes from the plain source: no -1
    EXPECT_GE(r.y[size_t(t)], 100);
}

TEST(DataFolder, ListedShardsInOrderElseTheTwoFiles) {
  TempDir dir;
  write_token_shard(dir.file("train.bin"), ff::testing::ramp(50, 9), 9);
  write_token_shard(dir.file("val.bin"), ff::testing::ramp(50, 9), 9);
  DataFolderShards s = data_folder_shards(dir.path().string());
  EXPECT_EQ(s.train, std::vector<std::string>{dir.file("train.bin")});
  EXPECT_EQ(s.val, std::vector<std::string>{dir.file("val.bin")});
  ff::testing::write_all(dir.file("meta.json"), R"({"vocab_size": 9})");  // a meta.json without lists
  EXPECT_EQ(data_folder_shards(dir.path().string()).train, std::vector<std::string>{dir.file("train.bin")});

  for (const char* name : {"b-1.bin", "a-2.bin", "v.bin"}) write_token_shard(dir.file(name), ff::testing::ramp(50, 9), 9);
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": ["b-1.bin", "a-2.bin"], "val_shards": ["v.bin"]})");
  s = data_folder_shards(dir.path().string());
  EXPECT_EQ(s.train, (std::vector<std::string>{dir.file("b-1.bin"), dir.file("a-2.bin")}));
  EXPECT_EQ(s.val, std::vector<std::string>{dir.file("v.bin")});
}

TEST(DataFolder, RefusalsNameTheFileAndTheFix) {
  TempDir dir;
  const std::string d = dir.path().string();
  expect_error([&] { data_folder_shards(d); }, {"train.bin", "is missing", "fivefold prepare"});
  write_token_shard(dir.file("t0.bin"), ff::testing::ramp(50, 9), 9);
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": ["t0.bin", "t1.bin"], "val_shards": ["t0.bin"]})");
  expect_error([&] { data_folder_shards(d); }, {"t1.bin", "is missing", "meta.json", "train_shards", "fivefold prepare"});
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": ["t0.bin"]})");
  expect_error([&] { data_folder_shards(d); }, {"meta.json", "val_shards", "fivefold prepare"});
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": [], "val_shards": ["t0.bin"]})");
  expect_error([&] { data_folder_shards(d); }, {"train_shards", "non-empty"});
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": ["../t0.bin"], "val_shards": ["t0.bin"]})");
  expect_error([&] { data_folder_shards(d); }, {"train_shards", "../t0.bin", "not a shard file name"});
  ff::testing::write_all(dir.file("meta.json"), R"({"train_shards": )");
  expect_error([&] { data_folder_shards(d); }, {"meta.json", "not a JSON object"});
}
