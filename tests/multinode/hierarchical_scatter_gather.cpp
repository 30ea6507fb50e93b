// Comm's node-first reduce-scatter and all-gather across two namespaced nodes x 2 ranks
// (on_nodes.sh):
//  - all-gather: every element the value its owner's formula gives (the owner found from the chunk
//    rule written out here), and bitwise the flat all-gather's result, f32 and bf16 words alike;
//  - reduce-scatter: the own chunk against a double-precision sum within fp32 rounding, bitwise the
//    same in a second run (in place, async), and max exactly the largest value;
//  - the node-first path really taken: the bytes counted to the other node are exactly the own
//    chunk once (all-gather) and the peer's chunk once (reduce-scatter), half the flat algorithm's;
//  - below the default thresholds, and for bf16 reduce-scatters, the flat algorithm's bytes.
// Exit 0 when every check passes, 1 with the failed checks named otherwise.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/nodes.h"

using namespace ff;

namespace {

testkit::CheckTally check;

// The chunk rule of reduce_scatter / all_gather, written out: `parts` near-equal contiguous
// chunks, the first n % parts one element longer.
size_t chunk_count(size_t n, int parts, int index) { return n / size_t(parts) + (size_t(index) < n % size_t(parts)); }
size_t chunk_offset(size_t n, int parts, int index) {
  return size_t(index) * (n / size_t(parts)) + std::min(size_t(index), n % size_t(parts));
}

void node_first_from(const Comm& world, size_t min_bytes) {
  CommOptions o = world.options();
  o.hierarchical_reduce_scatter_min_bytes = o.hierarchical_all_gather_min_bytes = min_bytes;
  world.set_options(o);
}

// Ranks on other nodes than this one, and this rank's peer there: the rank at the same place
// among its node's ranks.
struct Placement {
  std::vector<int> off_node;
  int peer = -1;
};
Placement placement(const Comm& world) {
  const std::vector<int>& nodes = world_rank_nodes();
  const int me = world.rank(), my_node = nodes[size_t(me)];
  auto place_of = [&](int r) { return int(std::count(nodes.begin(), nodes.begin() + r, nodes[size_t(r)])); };
  Placement p;
  for (int r = 0; r < world.size(); ++r) {
    if (nodes[size_t(r)] == my_node) continue;
    p.off_node.push_back(r);
    if (place_of(r) == place_of(me)) p.peer = r;
  }
  return p;
}

// An all-gather of n elements: returns the cross-node bytes counted.
uint64_t gather(const Comm& world, const void* chunk, void* full, size_t n, CommType type, bool async) {
  world.reset_stats();
  if (async)
    world.all_gather_async(ConstCommPtr(chunk, type), CommPtr(full, type), n).wait();
  else
    world.all_gather(ConstCommPtr(chunk, type), CommPtr(full, type), n);
  return world.stats().cross_node_bytes;
}

void all_gather_case(const Comm& world, size_t n, const Placement& where) {
  const int p = world.size(), me = world.rank();
  const std::string at = "all_gather n=" + std::to_string(n);
  const size_t count = chunk_count(n, p, me), offset = chunk_offset(n, p, me);
  std::vector<float> chunk(count);
  for (size_t j = 0; j < count; ++j) chunk[j] = testkit::rank_value(me, offset + j);

  std::vector<float> flat(n), hier(n, -1.0f), in_place(n, -1.0f);
  node_first_from(world, SIZE_MAX);
  const uint64_t flat_bytes = gather(world, chunk.data(), flat.data(), n, CommType::f32, false);
  node_first_from(world, 0);
  const uint64_t hier_bytes = gather(world, chunk.data(), hier.data(), n, CommType::f32, false);
  std::copy(chunk.begin(), chunk.end(), in_place.begin() + std::ptrdiff_t(offset));
  const uint64_t in_place_bytes = gather(world, in_place.data() + offset, in_place.data(), n, CommType::f32, true);

  size_t wrong = n;
  for (int owner = 0; owner < p && wrong == n; ++owner) {
    for (size_t i = chunk_offset(n, p, owner); i < chunk_offset(n, p, owner) + chunk_count(n, p, owner); ++i) {
      if (hier[i] != testkit::rank_value(owner, i)) {
        wrong = i;
        break;
      }
    }
  }
  check(wrong == n, at + ": element " + std::to_string(wrong) + " is not its owner's value");
  check(std::memcmp(hier.data(), flat.data(), n * sizeof(float)) == 0, at + ": differs from the flat all_gather");
  check(std::memcmp(in_place.data(), flat.data(), n * sizeof(float)) == 0,
        at + ": the in-place async form differs from the flat all_gather");
  // The own chunk crosses once (to the peer), against once per off-node rank flat.
  const uint64_t own = count * sizeof(float);
  check(hier_bytes == own && in_place_bytes == own,
        at + ": " + std::to_string(hier_bytes) + " / " + std::to_string(in_place_bytes) +
            " bytes crossed node first, expected the own chunk's " + std::to_string(own));
  check(flat_bytes == own * where.off_node.size(),
        at + ": flat crossed " + std::to_string(flat_bytes) + " bytes, expected " + std::to_string(own * where.off_node.size()));

  // bf16 words are copied, never rounded: the same path, bitwise equal.
  std::vector<uint16_t> chunk16(count), flat16(n), hier16(n);
  for (size_t j = 0; j < count; ++j) chunk16[j] = uint16_t(offset + j + 7919 * size_t(me));
  node_first_from(world, SIZE_MAX);
  gather(world, chunk16.data(), flat16.data(), n, CommType::bf16, false);
  node_first_from(world, 0);
  const uint64_t hier16_bytes = gather(world, chunk16.data(), hier16.data(), n, CommType::bf16, true);
  check(hier16 == flat16, at + " bf16: differs from the flat all_gather");
  check(hier16_bytes == count * 2, at + " bf16: did not go node first");
}

uint64_t scatter(const Comm& world, const float* in, float* out, size_t n, ReduceOp op, bool async) {
  world.reset_stats();
  if (async)
    world.reduce_scatter_async(in, out, n, op).wait();
  else
    world.reduce_scatter(in, out, n, op);
  return world.stats().cross_node_bytes;
}

void reduce_scatter_case(const Comm& world, size_t n, const Placement& where) {
  const int p = world.size(), me = world.rank();
  const std::string at = "reduce_scatter n=" + std::to_string(n);
  const size_t count = chunk_count(n, p, me), offset = chunk_offset(n, p, me);
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = testkit::rank_value(me, i);

  std::vector<float> flat(count), hier(count), most(count);
  node_first_from(world, SIZE_MAX);
  const uint64_t flat_bytes = scatter(world, in.data(), flat.data(), n, ReduceOp::sum, false);
  node_first_from(world, 0);
  const uint64_t hier_bytes = scatter(world, in.data(), hier.data(), n, ReduceOp::sum, false);
  scatter(world, in.data(), most.data(), n, ReduceOp::max, false);
  // Last, as it overwrites the own chunk of `in`: in place and async.
  scatter(world, in.data(), in.data() + offset, n, ReduceOp::sum, true);

  const testkit::WorstElement worst = testkit::worst_against_double_sum(hier.data(), offset, count, p);
  check(worst.excess <= 1.0, at + ": element " + std::to_string(worst.index) + " is " +
                                 std::to_string(worst.excess) + "x the fp32 rounding bound off the double sum");
  check(std::memcmp(in.data() + offset, hier.data(), count * sizeof(float)) == 0,
        at + ": a second run (in place, async) differs bitwise from the first");
  size_t wrong_max = count;
  for (size_t j = 0; j < count && wrong_max == count; ++j) {
    float expected = testkit::rank_value(0, offset + j);
    for (int r = 1; r < p; ++r) expected = std::max(expected, testkit::rank_value(r, offset + j));
    if (most[j] != expected) wrong_max = j;
  }
  check(wrong_max == count, at + " max: element " + std::to_string(offset + wrong_max) + " is not the largest value");
  // Node first, only the node's sum of the peer's chunk crosses; flat, this rank's part of every
  // off-node chunk.
  const uint64_t peer = chunk_count(n, p, where.peer) * sizeof(float);
  uint64_t off_node = 0;
  for (int r : where.off_node) off_node += chunk_count(n, p, r) * sizeof(float);
  check(hier_bytes == peer, at + ": " + std::to_string(hier_bytes) + " bytes crossed node first, expected the peer's chunk's " +
                                std::to_string(peer));
  check(flat_bytes == off_node, at + ": flat crossed " + std::to_string(flat_bytes) + " bytes, expected " +
                                    std::to_string(off_node));
}

// What stays flat: sizes under the default thresholds, and bf16 sums (one rounding, not two).
void flat_cases(const Comm& world, const Placement& where) {
  const int p = world.size(), me = world.rank();
  world.set_options(CommOptions{});
  const size_t n = 4099;
  std::vector<float> full(n, 1.0f), part(chunk_count(n, p, me), 1.0f);
  const uint64_t own = chunk_count(n, p, me) * sizeof(float);
  check(gather(world, part.data(), full.data(), n, CommType::f32, false) == own * where.off_node.size(),
        "a 16 KiB all_gather under the default options did not stay flat");
  uint64_t off_node = 0;
  for (int r : where.off_node) off_node += chunk_count(n, p, r) * sizeof(float);
  check(scatter(world, full.data(), part.data(), n, ReduceOp::sum, false) == off_node,
        "a 16 KiB reduce_scatter under the default options did not stay flat");

  node_first_from(world, 0);
  const size_t m = 100003;
  std::vector<uint16_t> in16(m, 0x3f80), out16(chunk_count(m, p, me));  // bf16 1.0
  world.reset_stats();
  world.reduce_scatter(ConstCommPtr(in16.data(), CommType::bf16), CommPtr(out16.data(), CommType::bf16), m);
  uint64_t off_node16 = 0;
  for (int r : where.off_node) off_node16 += chunk_count(m, p, r) * 2;
  check(world.stats().cross_node_bytes == off_node16, "a bf16 reduce_scatter went node first (it must round once)");
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (!testkit::two_nodes_of_two_ranks(world)) return 2;
  const Placement where = placement(world);
  // Odd lengths (no chunk or block divides evenly); the largest is cut into more blocks than run
  // at once.
  for (size_t n : {size_t(262147), size_t(1000003), size_t(9000011)}) {
    all_gather_case(world, n, where);
    reduce_scatter_case(world, n, where);
  }
  flat_cases(world, where);
  return check.verdict(world, "node-first reduce_scatter / all_gather: value, bitwise, determinism and cross-node byte checks pass");
}
