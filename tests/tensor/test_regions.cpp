// Closed-form checks of the four region pairs (forward and its backward dual) under mpirun -np 2
// and 4: rank r's input element i is r + (i mod 13), so a sum is p(p-1)/2 + p (i mod 13) and a
// gathered chunk names the rank it came from.
#include <gtest/gtest.h>

#include <vector>

#include "../comm/mpi_test_util.h"
#include "parallel/tensor/regions.h"

using namespace ff;
using ff::test::world;

namespace {
constexpr size_t kRows = 8, kWidth = 6;  // an (N, width) buffer; N divides by 2 and 4
std::vector<float> ranked(int r, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = test::input<float>(r, i);
  return x;
}
}  // namespace

TEST(Regions, CopyToTpIsIdentityForwardAndAllReduceBackward) {
  const Comm& tp = world();
  const size_t n = kRows * kWidth;
  std::vector<float> x = ranked(tp.rank(), n);
  EXPECT_EQ(regions::copy_to_tp_forward(x.data()).f32(), x.data());
  regions::copy_to_tp_backward(tp, x.data(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], test::expected_sum<float>(tp.size(), i)) << i;
}

TEST(Regions, ReduceFromTpIsAllReduceForwardAndIdentityBackward) {
  const Comm& tp = world();
  const size_t n = kRows * kWidth;
  std::vector<float> x = ranked(tp.rank(), n);
  regions::reduce_from_tp_forward(tp, x.data(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], test::expected_sum<float>(tp.size(), i)) << i;
  EXPECT_EQ(regions::reduce_from_tp_backward(x.data()), x.data());
}

TEST(Regions, GatherFromSpGathersForwardAndReduceScattersBackward) {
  const Comm& tp = world();
  const int p = tp.size(), r = tp.rank();
  const size_t n = kRows * kWidth, shard = n / size_t(p);
  // Forward: shard element j of rank q = 100 q + j lands at q * shard + j.
  std::vector<float> mine(shard), full(n);
  for (size_t j = 0; j < shard; ++j) mine[j] = float(100 * r + int(j));
  regions::gather_from_sp_forward(tp, mine.data(), full.data(), n);
  for (int q = 0; q < p; ++q)
    for (size_t j = 0; j < shard; ++j) ASSERT_EQ(full[size_t(q) * shard + j], float(100 * q + int(j)));
  // Backward: every rank's full gradient is summed, and rank r keeps rows of its own shard.
  std::vector<float> grad = ranked(r, n);
  const float* back = regions::gather_from_sp_backward(tp, grad.data(), n);
  EXPECT_EQ(back, grad.data() + size_t(r) * shard);
  for (size_t j = 0; j < shard; ++j)
    ASSERT_EQ(back[j], test::expected_sum<float>(p, size_t(r) * shard + j)) << j;
}

TEST(Regions, ReduceScatterToSpReducesForwardAndGathersBackward) {
  const Comm& tp = world();
  const int p = tp.size(), r = tp.rank();
  const size_t n = kRows * kWidth, shard = n / size_t(p);
  std::vector<float> x = ranked(r, n);
  const float* out = regions::reduce_scatter_to_sp_forward(tp, x.data(), n);
  EXPECT_EQ(out, x.data() + size_t(r) * shard);
  for (size_t j = 0; j < shard; ++j)
    ASSERT_EQ(out[j], test::expected_sum<float>(p, size_t(r) * shard + j)) << j;
  std::vector<float> dshard(shard), dfull(n);
  for (size_t j = 0; j < shard; ++j) dshard[j] = float(-7 * r - int(j));
  regions::reduce_scatter_to_sp_backward(tp, dshard.data(), dfull.data(), n);
  for (int q = 0; q < p; ++q)
    for (size_t j = 0; j < shard; ++j) ASSERT_EQ(dfull[size_t(q) * shard + j], float(-7 * q - int(j)));
}

// The pairs are duals: <forward(x), y> = <x, backward(y)> summed over ranks, the defining
// property of an adjoint (what makes backward the gradient of forward).
TEST(Regions, EachBackwardIsTheAdjointOfItsForward) {
  const Comm& tp = world();
  const int p = tp.size(), r = tp.rank();
  const size_t n = kRows * kWidth, shard = n / size_t(p);
  auto dot = [&](const float* a, const float* b, size_t m) {
    double s = 0;
    for (size_t i = 0; i < m; ++i) s += double(a[i]) * b[i];
    tp.all_reduce(&s, 1);
    return s;
  };
  std::vector<float> x(shard), y(n), full(n);
  for (size_t j = 0; j < shard; ++j) x[j] = float((r * 31 + int(j) * 7) % 11) - 5;
  for (size_t i = 0; i < n; ++i) y[i] = float((r * 17 + int(i) * 3) % 13) - 6;
  // gather_from_sp: shard -> full; its adjoint maps full -> shard.
  regions::gather_from_sp_forward(tp, x.data(), full.data(), n);
  const double lhs = dot(full.data(), y.data(), n);
  std::vector<float> y2 = y;
  const float* back = regions::gather_from_sp_backward(tp, y2.data(), n);
  EXPECT_DOUBLE_EQ(lhs, dot(x.data(), back, shard));
}
