// reduce_scatter of a group with L ranks on each of N nodes (L, N >= 2), node first. Call the
// rank at place i on node k (i, k): it owns chunk (i, k) of the result (chunk_range in the group's
// rank order, as the flat algorithm). First, inside each node, rank (i, k) receives from the other
// ranks of its node their contributions to the chunks of its peers (i, 0..N-1) and adds them to its
// own: it then holds node k's sum of each of those N chunks. Then, across nodes, each such node sum
// goes to the chunk's owner, which adds the N-1 that reach it to its own node's. Only the node sums
// cross the link, N-1 chunks per rank where the flat algorithm sends L(N-1): 1/L of its bytes.
//
// The sums run in a fixed order: own contribution, then the node's places i-1, i-2, ...; then
// the own node's sum, then nodes k-1, k-2, ... So the result is the same from run to run whatever
// order messages arrive in, but not bitwise the flat algorithm's (whose order is by rank).
//
// Every chunk is cut into blocks alike (block_piece). A block runs its two exchanges one after the
// other with a reduction after each, on scratch it takes when it starts (about the block's size)
// and gives back when done; a few blocks run at once, so the link and the node overlap.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "comm/engine.h"
#include "comm/op.h"

namespace ff::detail {
namespace {

class ScatterBlock final : public Op {
 public:
  ScatterBlock(std::shared_ptr<CommState> comm, NodeHierarchy& h, const std::byte* in, std::byte* out, size_t n,
               CommType type, ReduceOp op, int blocks, int block)
      : Op(std::move(comm), CommOpKind::reduce_scatter),
        h_(h), in_(in), out_(out), n_(n), type_(type), op_(op), es_(comm_type_size(type)),
        blocks_(blocks), block_(block),
        tag_inside_(coll_tag(h.inside->next_seq++, 0)),
        tag_across_(coll_tag(h.across->next_seq++, 0)) {}

  void start() override;
  bool progress() override {
    bool moved = stage_->progress();
    return advance() || moved;
  }
  std::string describe() const override {
    const std::string block = "block " + std::to_string(block_ + 1) + " of " + std::to_string(blocks_);
    return stage_ ? block + ", " + stage_->describe() : block + " (not started)";
  }
  void release() override;

 private:
  ChunkRange piece(int owner) const { return block_piece(n_, comm_->size, owner, blocks_, block_); }
  int owner(int node, int place) const { return h_.ranks[size_t(node)][size_t(place)]; }
  // Scratch: receive slots (from place i-k for peer node b: slot (k-1)N + b, reused across
  // nodes) and the node sums to send across (slot (L-1)N + b), each as long as the longest piece.
  std::byte* slot(size_t index) const { return scratch_ + index * slot_elems_ * es_; }
  std::byte* node_sum(int b) const { return slot(size_t(h_.inside->size - 1) * size_t(h_.across->size) + size_t(b)); }
  std::byte* own_piece() const { return out_ + (piece(comm_->rank).offset - chunk_range(n_, comm_->size, comm_->rank).offset) * es_; }
  std::shared_ptr<Op> inside_exchange();
  std::shared_ptr<Op> across_exchange();
  void reduce_inside();
  void reduce_across();
  bool advance();

  NodeHierarchy& h_;
  const std::byte* in_;
  std::byte* out_;
  size_t n_;
  CommType type_;
  ReduceOp op_;
  size_t es_;
  int blocks_, block_;
  int tag_inside_, tag_across_;
  std::byte* scratch_ = nullptr;
  size_t slot_elems_ = 0;
  bool across_ = false;
  std::shared_ptr<Op> stage_;
};

void ScatterBlock::start() {
  for (int r = 0; r < comm_->size; ++r) slot_elems_ = std::max(slot_elems_, piece(r).count);
  const size_t slots = size_t(h_.inside->size) * size_t(h_.across->size);
  scratch_ = Engine::instance().scratch().take(std::max<size_t>(slots * slot_elems_ * es_, 1));
  stage_ = inside_exchange();
  stage_->start();
  advance();
}

// To place i+k: this rank's contributions to the pieces of (i+k, b) for every node b; from place
// i-k: its contributions to (i, b), into slot (k-1)N + b. Node by node on both sides, so the
// messages between two ranks match in order.
std::shared_ptr<Op> ScatterBlock::inside_exchange() {
  const int nodes = h_.across->size, places = h_.inside->size, place = h_.inside->rank;
  std::vector<Transfer> sends, recvs;
  for (int k = 1; k < places; ++k) {
    const int to = (place + k) % places, from = (place - k + places) % places;
    for (int b = 0; b < nodes; ++b) {
      const ChunkRange theirs = piece(owner(b, to)), mine = piece(owner(b, place));
      if (theirs.count > 0) sends.push_back({to, const_cast<std::byte*>(in_) + theirs.offset * es_, theirs.count});
      if (mine.count > 0) recvs.push_back({from, slot(size_t(k - 1) * size_t(nodes) + size_t(b)), mine.count});
    }
  }
  return make_exchange(h_.inside, CommOpKind::reduce_scatter, type_, tag_inside_, std::move(sends),
                       std::move(recvs), "inside the node");
}

// The node's sum for rank (i, b) goes to node b; from node k-j comes its sum of this rank's piece,
// into slot j-1 (the inside slots are consumed by now).
std::shared_ptr<Op> ScatterBlock::across_exchange() {
  const int nodes = h_.across->size, node = h_.across->rank, place = h_.inside->rank;
  const size_t own = piece(comm_->rank).count;
  std::vector<Transfer> sends, recvs;
  for (int j = 1; j < nodes; ++j) {
    const int to = (node + j) % nodes, from = (node - j + nodes) % nodes;
    const size_t theirs = piece(owner(to, place)).count;
    if (theirs > 0) sends.push_back({to, node_sum(to), theirs});
    if (own > 0) recvs.push_back({from, slot(size_t(j - 1)), own});
  }
  return make_exchange(h_.across, CommOpKind::reduce_scatter, type_, tag_across_, std::move(sends),
                       std::move(recvs), "across nodes");
}

// This node's sum of each peer's piece: the own contribution first, then places i-1, i-2, ...
// The own node's goes straight to the output (in place: out may be the own chunk of in).
void ScatterBlock::reduce_inside() {
  const int nodes = h_.across->size, places = h_.inside->size, node = h_.across->rank, place = h_.inside->rank;
  for (int b = 0; b < nodes; ++b) {
    const ChunkRange p = piece(owner(b, place));
    std::byte* dst = b == node ? own_piece() : node_sum(b);
    const std::byte* first = in_ + p.offset * es_;
    for (int k = 1; k < places; ++k) {
      reduce_into(dst, k == 1 ? first : dst, slot(size_t(k - 1) * size_t(nodes) + size_t(b)), p.count, type_, op_);
    }
  }
}

// The own node's sum, then nodes k-1, k-2, ...
void ScatterBlock::reduce_across() {
  const size_t own = piece(comm_->rank).count;
  for (int j = 1; j < h_.across->size; ++j) reduce_into(own_piece(), own_piece(), slot(size_t(j - 1)), own, type_, op_);
}

bool ScatterBlock::advance() {
  if (!stage_->finished() || finished_) return false;
  if (!across_) {
    reduce_inside();
    across_ = true;
    stage_ = across_exchange();
    stage_->start();
    if (!stage_->finished()) return true;
  }
  reduce_across();
  release();
  finished_ = true;
  return true;
}

void ScatterBlock::release() {
  if (scratch_) Engine::instance().scratch().give(scratch_);
  scratch_ = nullptr;
}

}  // namespace

std::shared_ptr<Op> make_hierarchical_reduce_scatter(const std::shared_ptr<CommState>& comm, const void* in,
                                                     void* out, size_t n, CommType type, ReduceOp op) {
  NodeHierarchy& h = node_hierarchy(comm);
  const int blocks = node_first_blocks(n * comm_type_size(type));
  std::vector<std::shared_ptr<Op>> parts;
  for (int b = 0; b < blocks; ++b) {
    parts.push_back(std::make_shared<ScatterBlock>(comm, h, static_cast<const std::byte*>(in),
                                                   static_cast<std::byte*>(out), n, type, op, blocks, b));
  }
  std::string what = "hierarchical reduce_scatter of " + std::to_string(n) + " " + comm_type_name(type) + " (" +
                     reduce_op_name(op) + ") on a group of " + std::to_string(comm->size);
  return make_concurrent(comm, CommOpKind::reduce_scatter, std::move(parts), kNodeFirstWindow, std::move(what));
}

}  // namespace ff::detail
