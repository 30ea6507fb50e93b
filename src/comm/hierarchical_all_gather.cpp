// all_gather of a group with L ranks on each of N nodes (L, N >= 2), node first: each rank sends
// its chunk across to the ranks at its place on the other nodes (one copy per remote node), then
// forwards the N chunks it now holds to the other ranks of its node. A rank's chunk crosses the
// link N-1 times, where the flat pairwise algorithm sends it to every off-node rank, L(N-1) times:
// 1/L of the flat bytes between nodes. Chunks land where the flat algorithm puts them
// (chunk_range) and are only copied, so the result is bitwise the flat one's.
//
// Every chunk is cut into blocks alike (block_piece); each block runs its two exchanges one after
// the other, and several blocks run at once, so one block's forwarding inside the node overlaps
// the next one's transfer across.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/op.h"

namespace ff::detail {
namespace {

std::shared_ptr<Op> gather_block(const std::shared_ptr<CommState>& comm, NodeHierarchy& h, const std::byte* in,
                                 std::byte* out, size_t n, CommType type, int blocks, int block) {
  const size_t es = comm_type_size(type);
  const int p = comm->size, nodes = h.across->size, places = h.inside->size;
  const int node = h.across->rank, place = h.inside->rank;
  auto piece = [&](int owner) { return block_piece(n, p, owner, blocks, block); };
  const ChunkRange own = piece(comm->rank);
  // The own piece is sent from the caller's chunk, wherever it lies.
  std::byte* own_src = const_cast<std::byte*>(in) + (own.offset - chunk_range(n, p, comm->rank).offset) * es;
  const std::string what = "block " + std::to_string(block + 1) + " of " + std::to_string(blocks);

  std::vector<Transfer> sends, recvs;
  for (int k = 1; k < nodes; ++k) {
    const int to = (node + k) % nodes, from = (node - k + nodes) % nodes;
    const ChunkRange theirs = piece(h.ranks[size_t(from)][size_t(place)]);
    if (own.count > 0) sends.push_back({to, own_src, own.count});
    if (theirs.count > 0) recvs.push_back({from, out + theirs.offset * es, theirs.count});
  }
  auto across = make_exchange(h.across, CommOpKind::all_gather, type, coll_tag(h.across->next_seq++, 0),
                              std::move(sends), std::move(recvs), what + ", across nodes");

  // Inside: the pieces of every node's rank at this place go to each other place; messages
  // between two ranks match in the order posted, node by node on both sides.
  sends.clear(), recvs.clear();
  for (int k = 1; k < places; ++k) {
    const int to = (place + k) % places, from = (place - k + places) % places;
    for (int b = 0; b < nodes; ++b) {
      const ChunkRange held = piece(h.ranks[size_t(b)][size_t(place)]);
      const ChunkRange theirs = piece(h.ranks[size_t(b)][size_t(from)]);
      if (held.count > 0) sends.push_back({to, b == node ? own_src : out + held.offset * es, held.count});
      if (theirs.count > 0) recvs.push_back({from, out + theirs.offset * es, theirs.count});
    }
  }
  auto inside = make_exchange(h.inside, CommOpKind::all_gather, type, coll_tag(h.inside->next_seq++, 0),
                              std::move(sends), std::move(recvs), what + ", inside the node");
  return make_staged(comm, CommOpKind::all_gather, {across, inside}, what);
}

}  // namespace

std::shared_ptr<Op> make_hierarchical_all_gather(const std::shared_ptr<CommState>& comm, const void* in,
                                                 void* out, size_t n, CommType type) {
  NodeHierarchy& h = node_hierarchy(comm);
  const size_t es = comm_type_size(type);
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  std::vector<std::shared_ptr<Op>> parts;
  // The own chunk into its place (the caller may have put it there already).
  const ChunkRange mine = chunk_range(n, comm->size, comm->rank);
  if (mine.count > 0 && dst + mine.offset * es != src) {
    parts.push_back(make_local(comm, CommOpKind::all_gather,
                               [=] { std::memmove(dst + mine.offset * es, src, mine.count * es); }, "own chunk"));
  }
  const int blocks = node_first_blocks(n * es);
  for (int b = 0; b < blocks; ++b) parts.push_back(gather_block(comm, h, src, dst, n, type, blocks, b));
  std::string what = "hierarchical all_gather of " + std::to_string(n) + " " + comm_type_name(type) +
                     " on a group of " + std::to_string(comm->size);
  return make_concurrent(comm, CommOpKind::all_gather, std::move(parts), kNodeFirstWindow, std::move(what));
}

}  // namespace ff::detail
