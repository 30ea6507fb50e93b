// The stage split against a brute force over every contiguous split, plus its text and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/pipeline/stage_split.h"

namespace ff {
namespace {

struct Best {
  double max_cost = std::numeric_limits<double>::infinity();
  double squares = std::numeric_limits<double>::infinity();
};

// Enumerates every composition of L into S positive block counts; returns the least largest cost
// and, among the splits within 1e-9 of it, the least sum of squared costs.
Best brute_force(int L, int S, double e, double h) {
  std::vector<double> costs;
  std::vector<std::pair<double, double>> all;  // (max, squares) of every split
  std::function<void(int, int)> place = [&](int stage, int left) {
    if (stage == S) {
      if (left != 0) return;
      double mx = 0, sq = 0;
      for (double c : costs) mx = std::max(mx, c), sq += c * c;
      all.push_back({mx, sq});
      return;
    }
    for (int n = 1; n <= left - (S - 1 - stage); ++n) {
      costs.push_back(n + (stage == 0 ? e : 0) + (stage == S - 1 ? h : 0));
      place(stage + 1, left - n);
      costs.pop_back();
    }
  };
  place(0, L);
  Best b;
  for (const auto& [mx, sq] : all) b.max_cost = std::min(b.max_cost, mx);
  for (const auto& [mx, sq] : all)
    if (mx <= b.max_cost + 1e-9) b.squares = std::min(b.squares, sq);
  return b;
}

TEST(StageSplit, MatchesBruteForceOverAllContiguousSplits) {
  int checked = 0;
  for (int L = 1; L <= 10; ++L)
    for (int p = 1; p <= 3; ++p)
      for (int v = 1; v <= 3; ++v) {
        const int S = p * v;
        if (S > L) continue;
        for (double e : {0.0, 0.5, 2.25})
          for (double h : {0.0, 1.5, 7.0}) {
            SCOPED_TRACE("L=" + std::to_string(L) + " p=" + std::to_string(p) + " v=" +
                         std::to_string(v) + " e=" + std::to_string(e) + " h=" + std::to_string(h));
            const StageSplit split = split_stages(L, p, v, e, h);
            ASSERT_EQ(split.ranks, p);
            ASSERT_EQ(split.chunks, v);
            ASSERT_EQ(int(split.stages.size()), S);
            // A valid split: contiguous, covering [0, L), one block at least, costs as stated.
            int next = 0;
            double squares = 0;
            for (int s = 0; s < S; ++s) {
              const PipelineStage& st = split.stages[s];
              EXPECT_EQ(st.first_layer, next);
              EXPECT_GE(st.last_layer - st.first_layer, 1);
              EXPECT_EQ(st.embedding, s == 0);
              EXPECT_EQ(st.head, s == S - 1);
              const double want = (st.last_layer - st.first_layer) + (s == 0 ? e : 0) + (s == S - 1 ? h : 0);
              EXPECT_DOUBLE_EQ(st.cost, want);
              squares += st.cost * st.cost;
              next = st.last_layer;
            }
            EXPECT_EQ(next, L);
            const Best best = brute_force(L, S, e, h);
            EXPECT_NEAR(split.max_cost(), best.max_cost, 1e-9);
            EXPECT_NEAR(squares, best.squares, 1e-9);
            ++checked;
          }
      }
  EXPECT_GT(checked, 300);  // the sweep really ran
}

TEST(StageSplit, HeavyHeadTakesLayersFromTheLastStage) {
  // 1 + 5 = 3 + 3: the 3-block head leaves the last stage only 3 of the 8 layers.
  const StageSplit split = split_stages(8, 2, 1, 1.0, 3.0);
  EXPECT_EQ(split.stages[0].last_layer, 5);
  EXPECT_TRUE(split.even());
  EXPECT_EQ(describe_split(split),
            "stage 0 (rank 0, chunk 0): embedding + layers 0-4, cost 6.00\n"
            "stage 1 (rank 1, chunk 0): layers 5-7 + head, cost 6.00\n"
            "even split: every stage costs 6.00\n");
}

TEST(StageSplit, DescribesInterleavedChunksAndUnevenSplits) {
  const StageSplit split = split_stages(5, 2, 2, 0, 0);  // one stage must take 2 of 5 blocks
  EXPECT_FALSE(split.even());
  EXPECT_DOUBLE_EQ(split.max_cost(), 2.0);
  const std::string text = describe_split(split);
  EXPECT_NE(text.find("stage 2 (rank 0, chunk 1): layer"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 3 (rank 1, chunk 1): layer"), std::string::npos) << text;
  EXPECT_NE(text.find("+ head, cost"), std::string::npos) << text;
  // mean 1.25 over max 2.
  EXPECT_NE(text.find("uneven split: stage costs range from 1.00 to 2.00; the pipeline moves at "
                      "the slowest stage's pace, so stages are busy 63% of the time on average"),
            std::string::npos)
      << text;
}

TEST(StageSplit, OneStageHoldsEverything) {
  const StageSplit split = split_stages(3, 1, 1, 0.5, 2.0);
  ASSERT_EQ(split.stages.size(), 1u);
  EXPECT_TRUE(split.stages[0].embedding && split.stages[0].head);
  EXPECT_DOUBLE_EQ(split.stages[0].cost, 5.5);
  EXPECT_EQ(describe_split(split),
            "stage 0 (rank 0, chunk 0): embedding + layers 0-2 + head, cost 5.50\n"
            "even split: every stage costs 5.50\n");
}

std::string error_of(int L, int p, int v, double e, double h) {
  try {
    split_stages(L, p, v, e, h);
  } catch (const std::invalid_argument& ex) {
    return ex.what();
  }
  return "no error";
}

TEST(StageSplit, RefusesTooFewLayersAndBadInputsNamingTheNumbers) {
  const std::string few = error_of(6, 4, 2, 1, 1);
  EXPECT_NE(few.find("L = 6"), std::string::npos) << few;
  EXPECT_NE(few.find("p = 4"), std::string::npos) << few;
  EXPECT_NE(few.find("v = 2"), std::string::npos) << few;
  EXPECT_NE(few.find("8 virtual stages"), std::string::npos) << few;
  EXPECT_NE(few.find("lower p or v"), std::string::npos) << few;
  EXPECT_NE(error_of(4, 0, 1, 0, 0).find("p = 0"), std::string::npos);
  EXPECT_NE(error_of(4, 2, 0, 0, 0).find("v = 0"), std::string::npos);
  EXPECT_NE(error_of(4, 2, 1, -1, 0).find("finite and >= 0"), std::string::npos);
  EXPECT_NE(error_of(4, 2, 1, 0, std::nan("")).find("finite and >= 0"), std::string::npos);
  EXPECT_NE(error_of(0, 1, 1, 0, 0).find("L = 0"), std::string::npos);
}

}  // namespace
}  // namespace ff
