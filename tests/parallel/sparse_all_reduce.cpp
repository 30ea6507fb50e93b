// SparseAllReduce against the dense all-reduce it replaces: bit for bit on random floats (the
// summation order is the pairwise algorithm's on each element's owner), exact against a direct
// double sum on small dyadic values, -0.0 treated as written, and a mostly written buffer refused
// (the caller's dense path) without touching it; and DDP's BucketedAllReduce, whose last bucket
// takes this path when sparse and the dense one when not, against the direct sum. Run under
// mpirun with 2, 3 and 4 ranks.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "parallel/data/ddp.h"
#include "parallel/data/sparse_all_reduce.h"
#include "group_toys.h"

using namespace ff;

namespace {

constexpr size_t kChunk = SparseAllReduce::kChunk;

// A float from (rank, i) without any library generator: varied exponents and signs.
float noise(int rank, size_t i) {
  uint64_t z = (uint64_t(rank) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 32;
  return float(int64_t(z % 2000001) - 1000000) * std::ldexp(1.0f, int(z >> 60) - 20);
}

// Rank r writes chunks 10 + 3r and 11 + 3r (its own) and chunk 3 (every rank's: all p contributions
// meet there, so the order of the additions matters).
bool writes(int rank, size_t chunk) { return chunk == 3 || chunk == size_t(10 + 3 * rank) || chunk == size_t(11 + 3 * rank); }

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  const int p = world.size(), rank = world.rank();
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) std::printf("rank %d of %d: %s\n", rank, p, what.c_str());
    failures += !ok;
  };
  const size_t n = 60 * kChunk + 77;  // a short last chunk; not a multiple of p
  const size_t chunks = (n + kChunk - 1) / kChunk;

  // Random floats: the same bits as the dense all-reduce.
  {
    std::vector<float> x(n, 0.0f);
    for (size_t c = 0; c < chunks; ++c)
      if (writes(rank, c))
        for (size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) x[i] = noise(rank, i);
    if (rank == 0) x[7 * kChunk + 1] = -0.0f;  // chunk 7 written (if only by its sign) where rank 0 writes nothing else
    std::vector<float> dense = x;
    world.all_reduce(dense.data(), n);
    SparseAllReduce s;
    s.begin(x.data(), n, world);
    check(s.reduce(), "a buffer with few written chunks was not reduced sparsely");
    s.finish();
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) differ += std::memcmp(&x[i], &dense[i], sizeof(float)) != 0;
    check(differ == 0, std::to_string(differ) + " elements differ from the dense all-reduce's bits");
  }

  // Dyadic values: every partial sum is exact, so the result is the direct sum.
  {
    std::vector<float> x(n, 0.0f);
    for (size_t c = 0; c < chunks; ++c)
      if (writes(rank, c))
        for (size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
          x[i] = float(int((i * 7 + size_t(rank) * 13) % 64) - 32) / 8.0f;
    SparseAllReduce s;
    s.begin(x.data(), n, world);
    check(s.reduce(), "dyadic buffer not reduced sparsely");
    s.finish();
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < p; ++r)
        if (writes(r, i / kChunk)) want += double(int((i * 7 + size_t(r) * 13) % 64) - 32) / 8.0;
      wrong += double(x[i]) != want;
    }
    check(wrong == 0, std::to_string(wrong) + " elements differ from the direct sum");
  }

  // Mostly written: refused, the buffer untouched (the caller all-reduces it densely).
  {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = noise(rank, i);
    const std::vector<float> before = x;
    SparseAllReduce s;
    s.begin(x.data(), n, world);
    check(!s.reduce(), "a fully written buffer was reduced sparsely");
    check(!s.begun(), "refused but still holding the buffer");
    s.finish();
    check(std::memcmp(x.data(), before.data(), n * sizeof(float)) == 0, "a refused buffer was changed");
  }

  // DDP: two segments, the lower ("embedding", released last, its own bucket) written in a few
  // chunks, the upper everywhere; then the lower written everywhere too (the dense fallback).
  for (bool sparse_tail : {true, false}) {
    const size_t low = BucketedAllReduce::kSparseLastBucketMin + 1000, high = 5000;
    ParamGroupSpec g;
    g.name = "dense", g.comm = &world;
    testkit::add_segment(g, 0, low);
    testkit::add_segment(g, low, high);
    const GroupLayout layout(g, nullptr);
    world.reset_stats();
    std::vector<float> grads(low + high, 0.0f);
    auto value = [](int r, size_t i) { return float(int((i * 5 + size_t(r) * 11) % 32) - 16) / 4.0f; };
    auto written = [&](int r, size_t i) { return i >= low || !sparse_tail || writes(r, i / kChunk); };
    for (size_t i = 0; i < grads.size(); ++i)
      if (written(rank, i)) grads[i] = value(rank, i);
    BucketedAllReduce ddp(layout, grads.data(), world, 2 * high, true, nullptr);
    check(ddp.buckets().size() == 2, "expected one bucket per segment");
    ddp.set_sync(true);
    for (size_t s = layout.segments().size(); s-- > 0;) {
      ddp.acquire(layout.segments()[s]);
      ddp.release(layout.segments()[s]);
    }
    ddp.finish();
    size_t wrong = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
      double want = 0;
      for (int r = 0; r < p; ++r)
        if (written(r, i)) want += double(value(r, i));
      wrong += double(grads[i]) != want;
    }
    check(wrong == 0, std::string("DDP ") + (sparse_tail ? "sparse" : "dense") + " last bucket: " +
                          std::to_string(wrong) + " elements differ from the direct sum");
    // The sparse path all-gathers; the dense one only all-reduces.
    const uint64_t gathered = world.stats().bytes_of(CommOpKind::all_gather);
    world.reset_stats();
    check((gathered > 0) == sparse_tail, std::string("DDP ") + (sparse_tail ? "sparse" : "dense") +
                                             " last bucket: all-gather bytes " + std::to_string(gathered));
  }

  int total = failures;
  world.all_reduce(&total, 1);
  if (rank == 0) std::printf(total == 0 ? "sparse all-reduce: ok on %d ranks\n" : "sparse all-reduce: FAILED on %d ranks\n", p);
  return total == 0 ? 0 : 1;
}
