#pragma once
// What the node-first collective tests (hierarchical_*.cpp) share: each rank's input as a formula
// of (rank, index), how far a float result is from the double-precision sum of every rank's value
// in units of the fp32 rounding bound, and a tally of failed checks.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/nodes.h"

namespace ff::testkit {

// Rank r's value at i: varied signs and magnitudes over four decades, so the order of the sums
// shows in the low bits. Integer hashing and one multiplication: no floating-point expression the
// compiler could contract into an FMA in one caller and not in another (sin(a * i + b) did, and
// the checker then summed values one ulp off what the ranks had sent).
inline float rank_value(int rank, size_t i) {
  uint64_t h = uint64_t(i) * 0x9E3779B97F4A7C15ull ^ uint64_t(rank + 1) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const double unit = double(int32_t(uint32_t(h))) / 2147483648.0;  // in [-1, 1)
  constexpr double kScale[5] = {0.01, 0.1, 1.0, 10.0, 100.0};
  return float(unit * kScale[(i + size_t(rank)) % 5]);
}

struct WorstElement {
  size_t index = 0;
  double excess = 0;  // |got - exact| over the bound; <= 1 passes
};

// got[i - offset] for i in [offset, offset + count) against the sum over p ranks of rank_value.
// Each of the p-1 fp32 additions rounds to within half an ulp of its partial sum, each bounded by
// the sum of magnitudes.
inline WorstElement worst_against_double_sum(const float* got, size_t offset, size_t count, int p) {
  WorstElement worst;
  for (size_t i = offset; i < offset + count; ++i) {
    double exact = 0, magnitude = 0;
    for (int r = 0; r < p; ++r) {
      exact += double(rank_value(r, i));
      magnitude += std::fabs(double(rank_value(r, i)));
    }
    const double bound = double(p - 1) * magnitude * std::ldexp(1.0, -24) + 1e-45;
    const double excess = std::fabs(double(got[i - offset]) - exact) / bound;
    if (excess > worst.excess) worst = {i, excess};
  }
  return worst;
}

// Failed checks of this rank, each printed with the rank as it happens.
class CheckTally {
 public:
  void operator()(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "rank %d: FAIL: %s\n", comm_world().rank(), what.c_str());
    ++failures_;
  }
  int failures() const { return failures_; }
  // The exit code over every rank (0: no rank failed a check); rank 0 prints `pass_line` then.
  int verdict(const Comm& world, const char* pass_line) const {
    int total = failures_;
    world.set_options(CommOptions{});
    world.all_reduce(&total, 1);
    if (world.rank() == 0 && total == 0) std::printf("%s\n", pass_line);
    return total == 0 ? 0 : 1;
  }

 private:
  int failures_ = 0;
};

// The shape these tests need; otherwise says what it got.
inline bool two_nodes_of_two_ranks(const Comm& world) {
  if (world.size() == 4 && node_count() == 2) return true;
  std::fprintf(stderr, "needs 2 nodes x 2 ranks (on_nodes.sh 2 2 RATE), got %d ranks on %d nodes\n", world.size(),
               node_count());
  return false;
}

}  // namespace ff::testkit
