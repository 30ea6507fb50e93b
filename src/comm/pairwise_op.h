#pragma once
// Internal: reduce_scatter, all_gather and all_reduce (= reduce_scatter then all_gather) as
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
#include <memory>
#include <vector>

#include "comm/op.h"
#include "comm/request_set.h"

namespace ff::detail {

class PairwiseOp final : public Op {
 public:
  enum class Mode { reduce_scatter, all_gather, all_reduce };

  // reduce_scatter: in = n_total elements, out = this rank's chunk.
  // all_gather: in = this rank's chunk, out = n_total elements.
  // all_reduce: in == out = n_total elements, reduced in place.
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

}  // namespace ff::detail
