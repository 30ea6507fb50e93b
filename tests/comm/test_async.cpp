// Asynchronous operations: real progress while the caller computes, several operations in
// flight at once, request semantics, and point-to-point.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "comm/comm_world.h"
#include "mpi_test_util.h"

using namespace ff;
using ff::test::world;

namespace {

// A millisecond of arithmetic that makes no call into the comm layer.
double compute_for(std::chrono::milliseconds ms) {
  auto end = std::chrono::steady_clock::now() + ms;
  volatile double acc = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) acc = acc + std::sqrt(double(i) + acc);
  }
  return acc;
}

}  // namespace

TEST(Async, AllReduceCompletesWhileTheCallerOnlyComputes) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  size_t n = 4 << 20;  // 16 MiB of floats
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = test::input<float>(r, i);
  w.barrier();  // everyone starts together, so completion cannot wait on a late peer
  CommRequest req = w.all_reduce_async(x.data(), n);
  // Only compute; test() is a flag read (no MPI call), so if it turns true the comm thread
  // moved every message. The bound is generous: the point is that it happens at all.
  bool done = false;
  for (int ms = 0; ms < 20000 && !done; ++ms) {
    compute_for(std::chrono::milliseconds(1));
    done = req.test();
  }
  EXPECT_TRUE(done) << "the async all-reduce made no progress while the caller computed";
  req.wait();
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += x[i] != test::expected_sum<float>(p, i);
  EXPECT_EQ(bad, 0u);
}

// comm_wait_seconds counts the time a rank is blocked on communication, not the time the work
// was in flight: the last rank to arrive waits (almost) nothing, the ones waiting for it about as
// long as it was late; an operation that completed while the caller computed adds nothing.
TEST(Async, WaitClockCountsOnlyTimeBlockedOnCommunication) {
  Comm& w = world();
  const int r = w.rank(), late = w.size() - 1;
  constexpr double kLate = 0.3;
  float x = 1;
  w.barrier();
  const double before = comm_wait_seconds();
  if (r == late) compute_for(std::chrono::milliseconds(int(kLate * 1000)));
  w.all_reduce(&x, 1);
  const double blocked = comm_wait_seconds() - before;
  if (w.size() == 1) {
    EXPECT_EQ(blocked, 0.0);  // a group of one never communicates
  } else if (r == late) {
    EXPECT_LT(blocked, kLate / 3) << "the late rank found its peers ready";
  } else {
    EXPECT_GT(blocked, kLate * 0.8) << "a rank waiting for a late peer was not counted as blocked";
    EXPECT_LT(blocked, kLate * 5);
  }
  // Hidden: the caller computes until the operation is done, so its wait() returns at once.
  w.barrier();
  std::vector<float> y(1 << 16, 1.0f);
  CommRequest req = w.all_reduce_async(y.data(), y.size());
  for (int ms = 0; ms < 20000 && !req.test(); ++ms) compute_for(std::chrono::milliseconds(1));
  const double hidden_before = comm_wait_seconds();
  req.wait();
  EXPECT_EQ(comm_wait_seconds() - hidden_before, 0.0);
}

TEST(Async, SeveralOperationsInFlightCompleteInAnyWaitOrder) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  size_t n = 300007;
  std::vector<float> a(n), b(n);
  std::vector<double> c(n);
  std::vector<int32_t> rs_in(n), rs_out(chunk_range(n, p, r).count);
  for (size_t i = 0; i < n; ++i) {
    a[i] = test::input<float>(r, i);
    b[i] = test::input<float>(r, i + 1);
    c[i] = test::input<double>(r, i + 2);
    rs_in[i] = test::input<int32_t>(r, i + 3);
  }
  std::vector<CommRequest> reqs;
  reqs.push_back(w.all_reduce_async(a.data(), n));
  reqs.push_back(w.all_reduce_async(b.data(), n));
  reqs.push_back(w.all_reduce_async(c.data(), n));
  reqs.push_back(w.reduce_scatter_async(rs_in.data(), rs_out.data(), n));
  for (auto it = reqs.rbegin(); it != reqs.rend(); ++it) it->wait();  // reverse order
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bad += a[i] != test::expected_sum<float>(p, i);
    bad += b[i] != test::expected_sum<float>(p, i + 1);
    bad += c[i] != test::expected_sum<double>(p, i + 2);
  }
  ChunkRange cr = chunk_range(n, p, r);
  for (size_t i = 0; i < cr.count; ++i) bad += rs_out[i] != test::expected_sum<int32_t>(p, cr.offset + i + 3);
  EXPECT_EQ(bad, 0u);
}

TEST(Async, DestroyingAnUnwaitedRequestWaitsForIt) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  std::vector<float> x(100003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = test::input<float>(r, i);
  { CommRequest forgotten = w.all_reduce_async(x.data(), x.size()); }
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) bad += x[i] != test::expected_sum<float>(p, i);
  EXPECT_EQ(bad, 0u);
}

TEST(Async, RequestIsMovableAndWaitIsIdempotent) {
  Comm& w = world();
  std::vector<float> x(1000, 1.f);
  CommRequest a = w.all_reduce_async(x.data(), x.size());
  CommRequest b = std::move(a);
  EXPECT_TRUE(a.test());  // moved-from: empty, complete
  b.wait();
  b.wait();
  EXPECT_TRUE(b.test());
  EXPECT_EQ(x[999], float(w.size()));
  // The right-hand side starts before the assignment waits for the old request, so the two
  // operations are in flight together and need separate buffers.
  std::vector<float> y(1000, 1.f);
  CommRequest c;
  c = w.all_reduce_async(x.data(), x.size());  // assignment over an empty request
  c = w.all_reduce_async(y.data(), y.size());  // over a pending one: waits for it first
  EXPECT_EQ(x[0], float(w.size() * w.size()));  // the first is complete once assigned over
  c.wait();
  EXPECT_EQ(y[0], float(w.size()));
}

TEST(PointToPoint, RingOfAsyncSendsAndReceives) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (size_t n : {size_t(1), size_t(13), size_t(400001)}) {
    std::vector<int64_t> out(n), in(n, -1);
    for (size_t i = 0; i < n; ++i) out[i] = r * 10000000LL + int64_t(i);
    int next = (r + 1) % p, prev = (r - 1 + p) % p;
    CommRequest rq = w.recv_async(in.data(), n, prev, 7);
    CommRequest sq = w.send_async(out.data(), n, next, 7);
    sq.wait();
    rq.wait();
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += in[i] != prev * 10000000LL + int64_t(i);
    EXPECT_EQ(bad, 0u) << "n=" << n;
  }
}

TEST(PointToPoint, BlockingPairAndTagsMatchRegardlessOfPostingOrder) {
  Comm& w = world();
  if (w.size() < 2) GTEST_SKIP() << "needs two ranks";
  int r = w.rank();
  if (r == 0) {
    float one = 1, two = 2;
    w.send(&one, 1, 1, 1);
    w.send(&two, 1, 1, 2);
  } else if (r == 1) {
    float got1 = 0, got2 = 0;
    CommRequest second = w.recv_async(&got2, 1, 0, 2);  // posted first, matches tag 2 only
    w.recv(&got1, 1, 0, 1);
    second.wait();
    EXPECT_EQ(got1, 1.f);
    EXPECT_EQ(got2, 2.f);
  }
  w.barrier();
}
