// Comm's hierarchical all-reduce across two namespaced nodes x 2 ranks (on_nodes.sh): the result
// against a double-precision sum this program computes itself, within fp32 rounding; bitwise the
// same on every rank; and the node-first path really taken, told by the bytes counted to the other
// node (half those of the flat pairwise algorithm: only each rank's half of its node's sum crosses).
// Exit 0 when every check passes, 1 with the failed check named otherwise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/nodes.h"
#include "collective_checks.h"

using namespace ff;

namespace {

testkit::CheckTally check;

// One all-reduce of n floats with the given hierarchical threshold; `path` names it in messages.
// Returns the cross-node bytes this rank's Comm counted for it.
uint64_t run_case(const Comm& world, size_t n, size_t min_bytes, bool async, const std::string& path) {
  CommOptions options = world.options();
  options.hierarchical_min_bytes = min_bytes;
  world.set_options(options);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = testkit::rank_value(world.rank(), i);
  world.reset_stats();
  if (async) {
    CommRequest req = world.all_reduce_async(x.data(), n);
    req.wait();
  } else {
    world.all_reduce(x.data(), n);
  }
  uint64_t crossed = world.stats().cross_node_bytes;

  const testkit::WorstElement worst = testkit::worst_against_double_sum(x.data(), 0, n, world.size());
  check(worst.excess <= 1.0, path + " n=" + std::to_string(n) + ": element " + std::to_string(worst.index) +
                                 " is " + std::to_string(worst.excess) + "x the fp32 rounding bound off the double sum");

  // Bitwise the same everywhere: rank 0's result against every rank's.
  std::vector<float> first(x);
  world.broadcast(first.data(), n, 0);
  check(std::memcmp(first.data(), x.data(), n * sizeof(float)) == 0,
        path + " n=" + std::to_string(n) + ": results differ between ranks");
  return crossed;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (!testkit::two_nodes_of_two_ranks(world)) return 2;
  // Odd lengths (no piece or chunk divides evenly), the larger one cut into several blocks.
  for (size_t n : {size_t(1000003), size_t(262144), size_t(5000011)}) {
    uint64_t flat = run_case(world, n, SIZE_MAX, false, "flat");
    uint64_t hier = run_case(world, n, 0, false, "hierarchical");
    uint64_t hier_async = run_case(world, n, 0, true, "hierarchical async");
    // Flat: 2 chunks out in the reduce-scatter, the own chunk to 2 off-node ranks in the all-gather
    // (about n elements per rank). Hierarchical: only the all-reduce of this rank's half of the
    // node's sum with its one peer crosses: the peer's half of that piece out, the own half back,
    // n/2 elements, give or take one per block the buffer is cut into.
    const double expected = double(n) / 2 * sizeof(float);
    check(std::fabs(double(hier) - expected) <= 8 * sizeof(float),
          "hierarchical n=" + std::to_string(n) + ": " + std::to_string(hier) + " bytes crossed, expected " +
              std::to_string(expected));
    check(hier_async == hier, "the async form crossed other bytes than the blocking one");
    check(2 * hier < flat + 64, "hierarchical did not halve the cross-node bytes (flat " + std::to_string(flat) +
                                    ", hierarchical " + std::to_string(hier) + ")");
  }
  return check.verdict(world, "hierarchical all-reduce: double-sum, bitwise-equal and cross-node byte checks pass");
}
