// all_reduce of a group that spans nodes with several of its ranks on each: reduce-scatter
// inside the node, all-reduce of the own piece with the ranks at the same place on the other
// nodes, all-gather inside the node again. Each node then sends its 1/L-th pieces across (S per
// node per direction for an S-byte buffer, the minimum) where the flat pairwise algorithm sends
// every rank's chunks for off-node ranks straight over the link (2S per node with 2 ranks on each
// of 2 nodes). bench/multinode/collectives.sh measured it against the flat one and MPI's (tuned,
// han); bench/RESULTS.md has the table and the size where it starts to win.
//
// The three stages are the pairwise operations (collectives.cpp) on two groups the parent keeps:
// the group's ranks on this node, and this rank's peers (same position) on every node. The order
// of the sums differs from the flat algorithm's, so the result is not bitwise that of one node;
// it is still bitwise equal on every rank and the same from run to run.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/engine.h"
#include "comm/op.h"

namespace ff::detail {
namespace {

// Group ranks of each node, in group-rank order, nodes in order of their lowest group rank.
std::vector<std::vector<int>> ranks_by_node(const CommState& s) {
  const std::vector<int>& node_of_world = Engine::instance().rank_nodes();
  std::map<int, size_t> index;
  std::vector<std::vector<int>> nodes;
  for (int r = 0; r < s.size; ++r) {
    int node = node_of_world[size_t(s.world_ranks[size_t(r)])];
    auto [it, fresh] = index.emplace(node, nodes.size());
    if (fresh) nodes.emplace_back();
    nodes[it->second].push_back(r);
  }
  return nodes;
}

}  // namespace

bool group_spans_nodes_evenly(const CommState& s) {
  auto nodes = ranks_by_node(s);
  if (nodes.size() < 2 || nodes[0].size() < 2) return false;
  return std::all_of(nodes.begin(), nodes.end(), [&](const auto& n) { return n.size() == nodes[0].size(); });
}

NodeHierarchy& node_hierarchy(const std::shared_ptr<CommState>& s) {
  if (s->hierarchy) return *s->hierarchy;
  auto nodes = ranks_by_node(*s);
  std::vector<int> mine, peers;
  for (const auto& node : nodes) {
    auto at = std::find(node.begin(), node.end(), s->rank);
    if (at != node.end()) mine = node;
  }
  size_t place = size_t(std::find(mine.begin(), mine.end(), s->rank) - mine.begin());
  for (const auto& node : nodes) peers.push_back(node[place]);
  auto h = std::make_unique<NodeHierarchy>();
  h->ranks = nodes;
  h->inside = member_group(s, mine, kInternalKeyInsideNode);
  h->across = member_group(s, peers, kInternalKeyAcrossNodes);
  // Their messages are this group's traffic: count them in its cross-node bytes too.
  h->inside->counts_into = s.get();
  h->across->counts_into = s.get();
  s->hierarchy = std::move(h);
  return *s->hierarchy;
}

ChunkRange block_piece(size_t n, int parts, int owner, int blocks, int block) {
  const ChunkRange chunk = chunk_range(n, parts, owner);
  const ChunkRange piece = chunk_range(chunk.count, blocks, block);
  return {chunk.offset + piece.offset, piece.count};
}

// Blocks of about 4 MiB of the whole buffer: enough of them in flight for one block's transfer
// across nodes to overlap another's inside the node, each small enough that a reduce-scatter
// block's scratch (about its own size) stays a few MiB.
int node_first_blocks(size_t bytes) { return node_first_block_count(CommOpKind::reduce_scatter, bytes); }

namespace {

// The three stages of one block.
std::shared_ptr<Op> block_chain(const std::shared_ptr<CommState>& comm, NodeHierarchy& h, std::byte* base,
                                size_t n, CommType type, ReduceOp op) {
  ChunkRange piece = chunk_range(n, h.inside->size, h.inside->rank);
  std::byte* own = base + piece.offset * comm_type_size(type);
  std::vector<std::shared_ptr<Op>> stages;
  stages.push_back(make_pairwise(PairwiseMode::reduce_scatter, h.inside, base, own, n, type, op,
                                 h.inside->next_seq++));
  stages.push_back(make_pairwise(PairwiseMode::all_reduce, h.across, own, own, piece.count, type, op,
                                 h.across->next_seq++));
  stages.push_back(make_pairwise(PairwiseMode::all_gather, h.inside, own, base, n, type, op,
                                 h.inside->next_seq++));
  return make_staged(comm, CommOpKind::all_reduce, std::move(stages), "block");
}
}  // namespace

// The buffer is cut into blocks (node_first_block_count), each running its three stages on its
// own: the blocks drift apart, so one block's transfer across nodes overlaps another's inside the
// node (run one after the other, the three stages left the link idle two thirds of the time).
std::shared_ptr<Op> make_hierarchical_all_reduce(const std::shared_ptr<CommState>& comm, void* data,
                                                 size_t n, CommType type, ReduceOp op) {
  NodeHierarchy& h = node_hierarchy(comm);
  const size_t es = comm_type_size(type);
  const int blocks = node_first_block_count(CommOpKind::all_reduce, n * es);
  std::vector<std::shared_ptr<Op>> parts;
  for (int b = 0; b < blocks; ++b) {
    ChunkRange block = chunk_range(n, blocks, b);
    parts.push_back(block_chain(comm, h, static_cast<std::byte*>(data) + block.offset * es, block.count, type, op));
  }
  std::string what = "hierarchical all_reduce of " + std::to_string(n) + " " + comm_type_name(type) +
                     " on a group of " + std::to_string(comm->size);
  const size_t window = parts.size();
  return make_concurrent(comm, CommOpKind::all_reduce, std::move(parts), window, std::move(what));
}

}  // namespace ff::detail

namespace ff {

int node_first_block_count(CommOpKind op, size_t bytes) {
  constexpr size_t kBlockBytes = size_t(4) << 20;
  // An all_reduce's blocks all run at once, each with its own reduce-scatter scratch: at most 4.
  // The others' run kNodeFirstWindow at a time, so any number may be cut.
  const size_t most = op == CommOpKind::all_reduce ? 4 : size_t(1) << 20;
  return int(std::clamp<size_t>(bytes / kBlockBytes, 1, most));
}

}  // namespace ff
