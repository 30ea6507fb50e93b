// Closed-form checks of every collective, blocking and async, for every element type and for
// sizes that divide the group size and sizes that do not. Run under mpirun -np 2, 3, 4.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <numeric>

#include "mpi_test_util.h"

using namespace ff;
using ff::test::world;

template <typename T>
class Collectives : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t>;
TYPED_TEST_SUITE(Collectives, ElementTypes);

// Calls the blocking form, or the async form followed by wait().
#define BOTH_FORMS(async, blocking_call, async_call) \
  do {                                               \
    if (async) {                                     \
      CommRequest req = async_call;                  \
      req.wait();                                    \
    } else {                                         \
      blocking_call;                                 \
    }                                                \
  } while (0)

TYPED_TEST(Collectives, AllReduceSumIsClosedForm) {
  using T = TypeParam;
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (size_t n : test::sizes()) {
      std::vector<T> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = test::input<T>(r, i);
      BOTH_FORMS(async, w.all_reduce(x.data(), n), w.all_reduce_async(x.data(), n));
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += x[i] != test::expected_sum<T>(p, i);
      EXPECT_EQ(bad, 0u) << "n=" << n << " async=" << async;
    }
  }
}

TYPED_TEST(Collectives, AllReduceMaxAndMin) {
  using T = TypeParam;
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (size_t n : {size_t(13), size_t(300001)}) {
      std::vector<T> hi(n), lo(n);
      for (size_t i = 0; i < n; ++i) hi[i] = lo[i] = test::rotating<T>(r, p, i);
      BOTH_FORMS(async, w.all_reduce(hi.data(), n, ReduceOp::max),
                 w.all_reduce_async(hi.data(), n, ReduceOp::max));
      BOTH_FORMS(async, w.all_reduce(lo.data(), n, ReduceOp::min),
                 w.all_reduce_async(lo.data(), n, ReduceOp::min));
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        bad += hi[i] != T(p - 1 + p * int(i % 5));
        bad += lo[i] != T(p * int(i % 5));
      }
      EXPECT_EQ(bad, 0u) << "n=" << n << " async=" << async;
    }
  }
}

TYPED_TEST(Collectives, ReduceScatterLeavesEachRankItsReducedChunk) {
  using T = TypeParam;
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (size_t n : test::sizes()) {
      std::vector<T> in(n);
      for (size_t i = 0; i < n; ++i) in[i] = test::input<T>(r, i);
      ChunkRange c = chunk_range(n, p, r);
      std::vector<T> out(c.count + 1, T(99));  // one sentinel past the chunk
      BOTH_FORMS(async, w.reduce_scatter(in.data(), out.data(), n),
                 w.reduce_scatter_async(in.data(), out.data(), n));
      size_t bad = 0;
      for (size_t i = 0; i < c.count; ++i) bad += out[i] != test::expected_sum<T>(p, c.offset + i);
      EXPECT_EQ(bad, 0u) << "n=" << n << " async=" << async;
      EXPECT_EQ(out[c.count], T(99)) << "wrote past the chunk, n=" << n;
      for (size_t i = 0; i < n; ++i) bad += in[i] != test::input<T>(r, i);
      EXPECT_EQ(bad, 0u) << "the input must stay untouched";
    }
  }
}

TYPED_TEST(Collectives, AllGatherAssemblesEveryChunkFromItsOwner) {
  using T = TypeParam;
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (size_t n : test::sizes()) {
      ChunkRange c = chunk_range(n, p, r);
      std::vector<T> mine(c.count);
      for (size_t i = 0; i < c.count; ++i) mine[i] = test::input<T>(r, c.offset + i);
      std::vector<T> full(n, T(77));
      BOTH_FORMS(async, w.all_gather(mine.data(), full.data(), n),
                 w.all_gather_async(mine.data(), full.data(), n));
      size_t bad = 0;
      for (int q = 0; q < p; ++q) {
        ChunkRange cq = chunk_range(n, p, q);
        for (size_t i = cq.offset; i < cq.offset + cq.count; ++i) bad += full[i] != test::input<T>(q, i);
      }
      EXPECT_EQ(bad, 0u) << "n=" << n << " async=" << async;
    }
  }
}

TEST(Collectives, ReduceScatterAndAllGatherInPlaceOnOneFlatBuffer) {
  // The ZeRO pattern: reduce-scatter the gradient into the own chunk of the same buffer, then
  // all-gather the chunks back in place.
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (size_t n : test::sizes()) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = test::input<float>(r, i);
    ChunkRange c = chunk_range(n, p, r);
    w.reduce_scatter(x.data(), x.data() + c.offset, n);
    w.all_gather(x.data() + c.offset, x.data(), n);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += x[i] != test::expected_sum<float>(p, i);
    EXPECT_EQ(bad, 0u) << "n=" << n;
  }
}

TYPED_TEST(Collectives, BroadcastFromFirstAndLastRank) {
  using T = TypeParam;
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (int root : {0, p - 1}) {
      for (size_t n : {size_t(1), size_t(13), size_t(100003)}) {
        std::vector<T> x(n, T(5));
        if (r == root) for (size_t i = 0; i < n; ++i) x[i] = test::input<T>(root, i);
        BOTH_FORMS(async, w.broadcast(x.data(), n, root), w.broadcast_async(x.data(), n, root));
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) bad += x[i] != test::input<T>(root, i);
        EXPECT_EQ(bad, 0u) << "root=" << root << " n=" << n << " async=" << async;
      }
    }
  }
}

TEST(Collectives, AllToAllDeliversBlockDOfRankSToBlockSOfRankD) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (bool async : {false, true}) {
    for (size_t n : {size_t(1), size_t(13), size_t(70001)}) {
      std::vector<int64_t> in(n * size_t(p)), out(n * size_t(p), -1);
      for (int d = 0; d < p; ++d)
        for (size_t i = 0; i < n; ++i) in[size_t(d) * n + i] = r * 1000000000LL + d * 1000000LL + int64_t(i);
      BOTH_FORMS(async, w.all_to_all(in.data(), out.data(), n), w.all_to_all_async(in.data(), out.data(), n));
      size_t bad = 0;
      for (int s = 0; s < p; ++s)
        for (size_t i = 0; i < n; ++i)
          bad += out[size_t(s) * n + i] != s * 1000000000LL + r * 1000000LL + int64_t(i);
      EXPECT_EQ(bad, 0u) << "n=" << n << " async=" << async;
    }
  }
}

TEST(Collectives, AllToAllvWithUnevenAndEmptyBlocks) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  // Rank s sends (s + d) % 3 * 5 elements to rank d: some blocks are empty, sizes differ.
  auto count = [](int s, int d) { return size_t((s + d) % 3) * 5; };
  for (bool async : {false, true}) {
    std::vector<size_t> send_counts(static_cast<size_t>(p)), recv_counts(static_cast<size_t>(p));
    for (int q = 0; q < p; ++q) {
      send_counts[size_t(q)] = count(r, q);
      recv_counts[size_t(q)] = count(q, r);
    }
    std::vector<float> in, out(std::accumulate(recv_counts.begin(), recv_counts.end(), size_t(0)), -1.f);
    for (int d = 0; d < p; ++d)
      for (size_t i = 0; i < count(r, d); ++i) in.push_back(float(r * 100 + d * 10 + int(i)));
    BOTH_FORMS(async, w.all_to_allv(in.data(), send_counts, out.data(), recv_counts),
               w.all_to_allv_async(in.data(), send_counts, out.data(), recv_counts));
    size_t off = 0, bad = 0;
    for (int s = 0; s < p; ++s)
      for (size_t i = 0; i < count(s, r); ++i) bad += out[off++] != float(s * 100 + r * 10 + int(i));
    EXPECT_EQ(bad, 0u) << "async=" << async;
  }
}

TEST(Collectives, AllReduceIsBitwiseEqualOnEveryRankAndToReduceScatterPlusAllGather) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  size_t n = 500009;
  // Non-integer values: the float sum depends on order, so equality proves one fixed order.
  std::vector<float> a(n), rs(chunk_range(n, p, r).count), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = 1.0f / float(1 + (i * 7 + size_t(r) * 13) % 1000) + 1e-3f * float(r);
  std::vector<float> orig = a;
  w.all_reduce(a.data(), n);
  w.reduce_scatter(orig.data(), rs.data(), n);
  w.all_gather(rs.data(), b.data(), n);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float)));
  // Every rank holds the same bits: compare a checksum of the bit patterns by max and min.
  int64_t h = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &a[i], 4);
    h = (h * 1000003 + bits) % 2147483647;
  }
  int64_t hmax = h, hmin = h;
  w.all_reduce(&hmax, 1, ReduceOp::max);
  w.all_reduce(&hmin, 1, ReduceOp::min);
  EXPECT_EQ(hmax, hmin);
}

TEST(Collectives, BarrierReturnsOnEveryRank) {
  // No rank may leave a barrier before the last one entered it. One rank enters 50 ms late; every
  // rank's exit time must be at or after that entry. steady_clock is CLOCK_MONOTONIC, one clock
  // for every process on the machine (CTest runs the ranks on one host). A barrier that returned
  // at once would let the punctual ranks leave ~50 ms before the late entry.
  Comm& w = world();
  using us = std::chrono::microseconds;
  auto now_us = [] {
    return int64_t(
        std::chrono::duration_cast<us>(std::chrono::steady_clock::now().time_since_epoch()).count());
  };
  for (int late : {w.size() - 1, 0}) {
    w.barrier();  // start together
    if (w.rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int64_t entered = now_us();
    w.barrier();
    int64_t left = now_us();
    int64_t last_entry = entered, first_exit = left;
    w.all_reduce(&last_entry, 1, ReduceOp::max);
    w.all_reduce(&first_exit, 1, ReduceOp::min);
    EXPECT_GE(first_exit, last_entry) << "a rank left the barrier before rank " << late << " entered it";
  }
}

TEST(Collectives, StatsCountThePayloadEachRankContributes) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  w.reset_stats();
  std::vector<float> x(100), chunk(chunk_range(100, p, r).count);
  w.all_reduce(x.data(), 100);
  w.all_reduce_async(x.data(), 10).wait();
  w.reduce_scatter(x.data(), chunk.data(), 100);
  w.all_gather(chunk.data(), x.data(), 100);
  w.broadcast(x.data(), 100, 0);
  const CommStats& s = w.stats();
  EXPECT_EQ(s.bytes_of(CommOpKind::all_reduce), 110u * 4);
  EXPECT_EQ(s.calls_of(CommOpKind::all_reduce), 2u);
  EXPECT_EQ(s.bytes_of(CommOpKind::reduce_scatter), 400u);
  EXPECT_EQ(s.bytes_of(CommOpKind::all_gather), chunk.size() * 4);
  EXPECT_EQ(s.bytes_of(CommOpKind::broadcast), r == 0 ? 400u : 0u);
  w.reset_stats();
  EXPECT_EQ(w.stats().total_bytes(), 0u);
}

TEST(Collectives, BadArgumentsAreRejectedWithTheFix) {
  Comm& w = world();
  float x = 0;
  try {
    w.broadcast(&x, 1, w.size());
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(w.size()) + " is not a rank"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(w.send(&x, 1, 0, -1), std::invalid_argument);
  EXPECT_THROW(w.send(&x, 1, 0, 1 << 29), std::invalid_argument);
  EXPECT_THROW(w.all_reduce(static_cast<float*>(nullptr), 4), std::invalid_argument);
  std::vector<size_t> wrong(size_t(w.size()) + 1, 0);
  EXPECT_THROW(w.all_to_allv(&x, wrong, &x, wrong), std::invalid_argument);
}
