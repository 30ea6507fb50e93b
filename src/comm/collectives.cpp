// reduce_scatter, all_gather and all_reduce (= reduce_scatter then all_gather) as
// one state machine over point-to-point messages.
//
// Why not MPI_Iallreduce: Open MPI's nonblocking all-reduce (libnbc) picks a reduce+broadcast
// tree for fewer than 4 ranks or in-place buffers, which measured 0.4-0.8x the bus bandwidth
// of the blocking MPI_Allreduce here. Doing the algorithm ourselves also fixes the summation
// order, which the parallel layouts need (below).
//
// Algorithm (pairwise direct exchange, in segments):
//   reduce-scatter: rank r sends chunk d of its input to rank d for every d != r, and receives
//     the p-1 contributions to its own chunk r, accumulating them in a fixed order:
//       out = ((x_r + x_{r-1}) + x_{r-2}) + ... + x_{r-p+1}      (indices mod p)
//   all-gather: rank r sends its chunk to every other rank and receives theirs in place.
// Each rank sends and receives (p-1)/p of the buffer per phase, as a ring does, in 2 latency
// rounds instead of 2(p-1), at O(p) messages per rank: the right trade for one machine and
// tens of ranks. Chunk c is reduced on rank c only and then copied, so every rank ends with
// bitwise identical values, and all_reduce is bitwise equal to reduce_scatter + all_gather
// (DDP and ZeRO then produce identical weights).
//
// bf16/f16 contributions are widened and summed in an fp32 accumulator in that same order, and
// the chunk is rounded to 16 bits once at the end.
//
// Messages are cut into kSegmentBytes pieces. Received segments land in a few pooled scratch
// slots and are reduced while the next ones arrive (cache-resident, and the only extra memory
// is kSlots segments). Segments of a phase are processed strictly in order, so the result does
// not depend on arrival timing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_world.h"
#include "comm/engine.h"
#include "comm/op.h"

namespace ff::detail {
namespace {

class PairwiseOp final : public Op {
 public:
  using Mode = PairwiseMode;
  PairwiseOp(Mode mode, std::shared_ptr<CommState> comm, const void* in, void* out,
             size_t n_total, CommType type, ReduceOp op, uint64_t seq);

  void start() override;
  bool progress() override;
  std::string describe() const override;
  void release() override;

  static constexpr size_t kSegmentBytes = 1 << 20;  // tuned with bench/comm/bench_allreduce
  static constexpr int kSlots = 4;                     // receive slots for reduce-scatter
  static constexpr int kSendWindow = 4;                // segments in flight per destination

 private:
  enum Role : uint64_t { rs_recv = 0, rs_send = 1, ag_recv = 2, ag_send = 3 };
  struct PeerSends {
    size_t next = 0;    // next segment to post
    size_t nseg = 0;
    size_t done = 0;    // segments completed
    size_t prefix = 0;  // segments [0, prefix) all completed (completions may come out of order)
    std::vector<uint8_t> seg_done;
    int in_flight = 0;
  };

  size_t nseg(size_t count) const { return (count + seg_ - 1) / seg_; }
  void post();
  void post_rs_recvs();
  void post_sends(std::vector<PeerSends>& sends, Role role, size_t eligible_own);
  void post_ag_recvs();
  void reduce_ready();
  void on_done(uint64_t token, const MPI_Status& status, int error);
  static void send_completed(PeerSends& ps, size_t segment);
  void check_count(const MPI_Status& status, size_t expected, int peer);
  bool all_done() const;

  Mode mode_;
  CommType type_;
  ReduceOp op_;
  MPI_Datatype dtype_;
  size_t es_;       // element size in bytes
  size_t n_;        // n_total
  size_t seg_;      // elements per segment
  int p_, r_;
  int tag_rs_, tag_ag_;
  const std::byte* in_;
  std::byte* out_;

  // Reduce-scatter: units u = j*(p-1) + (k-1) receive segment j of chunk r from rank r-k.
  const std::byte* rs_send_base_ = nullptr;  // chunks sent to the other ranks
  const std::byte* rs_mine_ = nullptr;       // this rank's own contribution to chunk r
  std::byte* rs_dst_ = nullptr;              // where chunk r is accumulated
  size_t rs_units_ = 0, rs_posted_ = 0, rs_reduced_ = 0, rs_segs_done_ = 0;
  std::byte* slots_[kSlots] = {};
  // bf16/f16: the fp32 sum of the segment being reduced (segments are reduced one at a time, in
  // order), rounded into rs_dst_ once its last contribution is in.
  float* acc_ = nullptr;
  bool slot_full_[kSlots] = {};
  std::vector<PeerSends> rs_sends_;

  // All-gather: own chunk to everyone, everyone's chunk into ag_base_ at its offset.
  std::byte* ag_base_ = nullptr;
  std::vector<PeerSends> ag_sends_;
  std::vector<size_t> ag_recv_posted_;  // per peer: segments posted
  size_t ag_recvs_left_ = 0;

  RequestSet requests_;
};

// A request's token: role (2 bits) | peer (24 bits) | segment or unit index (38 bits).
uint64_t make_token(uint64_t role, int peer, size_t index) {
  return role | (uint64_t(peer) << 2) | (uint64_t(index) << 26);
}
uint64_t token_role(uint64_t t) { return t & 3; }
int token_peer(uint64_t t) { return int((t >> 2) & 0xFFFFFF); }
size_t token_index(uint64_t t) { return size_t(t >> 26); }

PairwiseOp::PairwiseOp(Mode mode, std::shared_ptr<CommState> comm, const void* in, void* out,
                       size_t n_total, CommType type, ReduceOp op, uint64_t seq)
    : Op(std::move(comm),
         mode == Mode::all_reduce       ? CommOpKind::all_reduce
         : mode == Mode::reduce_scatter ? CommOpKind::reduce_scatter
                                        : CommOpKind::all_gather),
      mode_(mode),
      type_(type),
      op_(op),
      dtype_(mpi_type(type)),
      es_(comm_type_size(type)),
      n_(n_total),
      seg_(std::max<size_t>(1, kSegmentBytes / comm_type_size(type))),
      p_(comm_->size),
      r_(comm_->rank),
      tag_rs_(coll_tag(seq, 0)),
      tag_ag_(coll_tag(seq, 1)),
      in_(static_cast<const std::byte*>(in)),
      out_(static_cast<std::byte*>(out)) {}

std::string PairwiseOp::describe() const {
  std::string s = std::string(comm_op_name(kind_)) + " of " + std::to_string(n_) + " " +
                  comm_type_name(type_);
  if (mode_ != Mode::all_gather) s += std::string(" (") + reduce_op_name(op_) + ")";
  return s + " on a group of " + std::to_string(p_);
}

void PairwiseOp::start() {
  ChunkRange mine = chunk_range(n_, p_, r_);
  if (mode_ != Mode::all_gather) {
    bool in_place = mode_ == Mode::all_reduce;
    rs_send_base_ = in_place ? out_ : in_;
    rs_mine_ = (in_place ? out_ : in_) + mine.offset * es_;
    rs_dst_ = in_place ? out_ + mine.offset * es_ : out_;
    rs_units_ = nseg(mine.count) * size_t(p_ - 1);
    if (rs_units_ > 0) {
      for (auto& slot : slots_) slot = Engine::instance().scratch().take(seg_ * es_);
      if (reduces_in_f32(type_))
        acc_ = reinterpret_cast<float*>(Engine::instance().scratch().take(seg_ * sizeof(float)));
    }
    rs_sends_.assign(size_t(p_), {});
    for (int d = 0; d < p_; ++d) {
      if (d == r_) continue;
      rs_sends_[size_t(d)].nseg = nseg(chunk_range(n_, p_, d).count);
      rs_sends_[size_t(d)].seg_done.assign(rs_sends_[size_t(d)].nseg, 0);
    }
  }
  if (mode_ != Mode::reduce_scatter) {
    ag_base_ = out_;
    if (mode_ == Mode::all_gather) {
      // The caller may pass its chunk already in place inside out (then there is nothing to copy).
      std::byte* own = out_ + mine.offset * es_;
      if (mine.count > 0 && own != in_) std::memmove(own, in_, mine.count * es_);
    }
    ag_sends_.assign(size_t(p_), {});
    ag_recv_posted_.assign(size_t(p_), 0);
    for (int d = 0; d < p_; ++d) {
      if (d == r_) continue;
      ag_sends_[size_t(d)].nseg = nseg(mine.count);
      ag_sends_[size_t(d)].seg_done.assign(nseg(mine.count), 0);
    }
  }
  post();
  finished_ = all_done();
}

bool PairwiseOp::progress() {
  bool moved = false;
  // Keep going while messages complete: each completion may make new ones postable.
  while (requests_.test_some(
             [&](uint64_t token, const MPI_Status& st, int error) { on_done(token, st, error); },
             [&] { return describe(); }) > 0) {
    moved = true;
    reduce_ready();
    post();
  }
  finished_ = all_done();
  return moved;
}

void PairwiseOp::post() {
  if (mode_ != Mode::all_gather) {
    post_rs_recvs();
    post_sends(rs_sends_, rs_send, 0);
  }
  if (mode_ != Mode::reduce_scatter) {
    post_ag_recvs();
    // all_reduce may send a segment of its chunk only once all p-1 contributions are in.
    size_t count = chunk_range(n_, p_, r_).count;
    post_sends(ag_sends_, ag_send, mode_ == Mode::all_gather ? nseg(count) : rs_segs_done_);
  }
}

void PairwiseOp::post_rs_recvs() {
  ChunkRange mine = chunk_range(n_, p_, r_);
  while (rs_posted_ < rs_units_ && rs_posted_ - rs_reduced_ < size_t(kSlots)) {
    size_t u = rs_posted_;
    size_t j = u / size_t(p_ - 1);
    int k = 1 + int(u % size_t(p_ - 1));
    int src = (r_ - k + p_) % p_;
    size_t len = std::min(seg_, mine.count - j * seg_);
    MPI_Request req;
    check_mpi(MPI_Irecv(slots_[u % kSlots], mpi_count(len), dtype_, src, tag_rs_, comm_->comm, &req),
              "MPI_Irecv", [&] { return describe(); });
    requests_.add(req, make_token(rs_recv, src, u));
    ++rs_posted_;
  }
}

// Sends of one phase: segment j of the chunk addressed to each peer, at most kSendWindow in
// flight per peer (posting everything at once would push the eager head of every segment
// into shared memory before the receiver wants it). For the all-gather phase only the first
// `eligible_own` segments of the own chunk are ready.
void PairwiseOp::post_sends(std::vector<PeerSends>& sends, Role role, size_t eligible_own) {
  for (int k = 1; k < p_; ++k) {
    int d = (r_ + k) % p_;
    PeerSends& ps = sends[size_t(d)];
    ChunkRange c = chunk_range(n_, p_, role == rs_send ? d : r_);
    const std::byte* base = role == rs_send ? rs_send_base_ : ag_base_;
    size_t limit = role == rs_send ? ps.nseg : std::min(ps.nseg, eligible_own);
    int tag = role == rs_send ? tag_rs_ : tag_ag_;
    while (ps.next < limit && ps.in_flight < kSendWindow) {
      size_t j = ps.next;
      size_t len = std::min(seg_, c.count - j * seg_);
      MPI_Request req;
      check_mpi(MPI_Isend(base + (c.offset + j * seg_) * es_, mpi_count(len), dtype_, d, tag,
                          comm_->comm, &req),
                "MPI_Isend", [&] { return describe(); });
      note_cross_node_send(*comm_, d, len * es_);
      requests_.add(req, make_token(role, d, j));
      ++ps.next;
      ++ps.in_flight;
    }
  }
}

// Receives of the all-gather phase go straight to their final place, so they are posted as
// early as allowed: all at once in all_gather; in all_reduce, the region of chunk s was the
// source of our reduce-scatter sends to rank s, so a part of it may be overwritten only once
// the sends that read it have completed.
void PairwiseOp::post_ag_recvs() {
  for (int s = 0; s < p_; ++s) {
    if (s == r_) continue;
    ChunkRange c = chunk_range(n_, p_, s);
    size_t allowed = mode_ == Mode::all_reduce ? rs_sends_[size_t(s)].prefix : nseg(c.count);
    size_t& posted = ag_recv_posted_[size_t(s)];
    while (posted < allowed) {
      size_t j = posted;
      size_t len = std::min(seg_, c.count - j * seg_);
      MPI_Request req;
      check_mpi(MPI_Irecv(ag_base_ + (c.offset + j * seg_) * es_, mpi_count(len), dtype_, s,
                          tag_ag_, comm_->comm, &req),
                "MPI_Irecv", [&] { return describe(); });
      requests_.add(req, make_token(ag_recv, s, j));
      ++ag_recvs_left_;
      ++posted;
    }
  }
}

// Reduces received reduce-scatter segments strictly in unit order (segment j from r-1, r-2,
// ..., r-p+1, then segment j+1): the accumulation order is fixed whatever the arrival order.
void PairwiseOp::reduce_ready() {
  ChunkRange mine = chunk_range(n_, p_, r_);
  while (rs_reduced_ < rs_posted_ && slot_full_[rs_reduced_ % kSlots]) {
    size_t u = rs_reduced_;
    size_t j = u / size_t(p_ - 1);
    int k = 1 + int(u % size_t(p_ - 1));
    size_t off = j * seg_;
    size_t len = std::min(seg_, mine.count - off);
    std::byte* dst = rs_dst_ + off * es_;
    const std::byte* first = k == 1 ? rs_mine_ + off * es_ : nullptr;  // the first adds our own part
    if (acc_) {
      reduce_widened(acc_, first, slots_[u % kSlots], len, type_, op_);
      if (k == p_ - 1) narrow_into(dst, acc_, len, type_);
    } else {
      reduce_into(dst, first ? first : dst, slots_[u % kSlots], len, type_, op_);
    }
    slot_full_[u % kSlots] = false;
    ++rs_reduced_;
    if (k == p_ - 1) rs_segs_done_ = j + 1;
  }
}

void PairwiseOp::on_done(uint64_t token, const MPI_Status& status, int error) {
  int peer = token_peer(token);
  size_t index = token_index(token);
  if (error != MPI_SUCCESS) {
    std::string what = token_role(token) == rs_recv || token_role(token) == ag_recv
                           ? "receiving from rank " + std::to_string(peer)
                           : "sending to rank " + std::to_string(peer);
    abort_job(describe() + ": " + what + " failed: " + mpi_error_string(error) +
              "; every rank of the group must call the same collective with the same n and "
              "element type, in the same order");
  }
  switch (token_role(token)) {
    case rs_recv: {
      size_t j = index / size_t(p_ - 1);
      ChunkRange mine = chunk_range(n_, p_, r_);
      check_count(status, std::min(seg_, mine.count - j * seg_), peer);
      slot_full_[index % kSlots] = true;
      break;
    }
    case rs_send:
      send_completed(rs_sends_[size_t(peer)], index);
      break;
    case ag_recv: {
      ChunkRange c = chunk_range(n_, p_, peer);
      check_count(status, std::min(seg_, c.count - index * seg_), peer);
      --ag_recvs_left_;
      break;
    }
    case ag_send:
      send_completed(ag_sends_[size_t(peer)], index);
      break;
  }
}

void PairwiseOp::send_completed(PeerSends& ps, size_t segment) {
  --ps.in_flight;
  ++ps.done;
  ps.seg_done[segment] = 1;
  while (ps.prefix < ps.nseg && ps.seg_done[ps.prefix]) ++ps.prefix;
}

// A shorter message than expected means the ranks passed different n: say so instead of
// returning half-filled buffers.
void PairwiseOp::check_count(const MPI_Status& status, size_t expected, int peer) {
  int got = 0;
  MPI_Get_count(&status, dtype_, &got);
  if (size_t(got) != expected) {
    abort_job(describe() + ": rank " + std::to_string(peer) + " sent a segment of " +
              std::to_string(got) + " elements where " + std::to_string(expected) +
              " were expected; every rank of the group must pass the same n");
  }
}

bool PairwiseOp::all_done() const {
  if (requests_.live() > 0) return false;
  if (mode_ != Mode::all_gather) {
    if (rs_reduced_ < rs_units_) return false;
    for (const auto& s : rs_sends_) if (s.done < s.nseg) return false;
  }
  if (mode_ != Mode::reduce_scatter) {
    for (int s = 0; s < p_; ++s) {
      if (s != r_ && ag_recv_posted_[size_t(s)] < nseg(chunk_range(n_, p_, s).count)) return false;
    }
    if (ag_recvs_left_ > 0) return false;
    for (const auto& s : ag_sends_) if (s.done < s.nseg) return false;
  }
  return true;
}

void PairwiseOp::release() {
  for (auto& slot : slots_) {
    if (slot) Engine::instance().scratch().give(slot);
    slot = nullptr;
  }
  if (acc_) Engine::instance().scratch().give(reinterpret_cast<std::byte*>(acc_));
  acc_ = nullptr;
}

}  // namespace

std::shared_ptr<Op> make_pairwise(PairwiseMode mode, std::shared_ptr<CommState> comm, const void* in,
                                  void* out, size_t n_total, CommType type, ReduceOp op, uint64_t seq) {
  return std::make_shared<PairwiseOp>(mode, std::move(comm), in, out, n_total, type, op, seq);
}

}  // namespace ff::detail
