#include "comm/pairwise_op.h"

#include <algorithm>
#include <cstring>

#include "comm/comm_world.h"
#include "comm/engine.h"
#include "comm/reduce.h"

namespace ff::detail {
namespace {

// A request's token: role (2 bits) | peer (24 bits) | segment or unit index (38 bits).
uint64_t make_token(uint64_t role, int peer, size_t index) {
  return role | (uint64_t(peer) << 2) | (uint64_t(index) << 26);
}
uint64_t token_role(uint64_t t) { return t & 3; }
int token_peer(uint64_t t) { return int((t >> 2) & 0xFFFFFF); }
size_t token_index(uint64_t t) { return size_t(t >> 26); }

}  // namespace

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

}  // namespace ff::detail
