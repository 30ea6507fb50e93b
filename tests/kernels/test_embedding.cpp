#include "check.h"
#include "kernels/embedding.h"

namespace {

using fftest::randn;

constexpr int N = 9, C = 70, V = 5;
const std::vector<int32_t> kTokens = {3, 0, 3, 4, 1, 3, 0, 2, 4};  // repeats on purpose

TEST(Embedding, ForwardGathersRows) {
  const auto table = randn(V * C, 1);
  std::vector<double> out(N * C);
  ff::embedding_forward(out.data(), kTokens.data(), table.data(), N, C);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) EXPECT_EQ(out[n * C + c], table[kTokens[n] * C + c]);
}

TEST(Embedding, BackwardMatchesFiniteDifferences) {
  auto table = randn(V * C, 2);
  const auto g = randn(N * C, 3);
  std::vector<double> dtable(V * C, 0.0), out(N * C);
  ff::embedding_backward(dtable.data(), g.data(), kTokens.data(), N, C, V);
  auto loss = [&] {
    ff::embedding_forward(out.data(), kTokens.data(), table.data(), N, C);
    return fftest::dot(out, g);
  };
  fftest::expect_matches_fd(table, dtable, loss, "dtable");
}

TEST(Embedding, FloatBackwardAccumulatesInRowOrderForAnyThreadCount) {
  const auto g = fftest::to_float(randn(N * C, 4));
  const auto start = fftest::to_float(randn(V * C, 5));
  auto run = [&](int threads) {
    const fftest::ScopedThreads scoped(threads);
    auto d = start;
    ff::embedding_backward(d.data(), g.data(), kTokens.data(), N, C, V);
    return d;
  };
  const auto one = run(1);
  EXPECT_EQ(one, run(2));
  for (int v = 0; v < V; ++v) {
    for (int c = 0; c < C; ++c) {
      float want = start[v * C + c];
      for (int n = 0; n < N; ++n)
        if (kTokens[n] == v) want += g[n * C + c];
      EXPECT_EQ(one[v * C + c], want);
    }
  }
}

}  // namespace
