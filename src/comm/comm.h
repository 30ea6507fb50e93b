#pragma once
// Comm: one process group (principle 4, docs/principles.md: a narrow collective interface, MPI
// behind it).
//
// Every collective must be called by every rank of the group, in the same order, with the same
// n, element type and root (MPI's rule). Blocking and async forms of an operation match each
// other (a blocking call is the async one plus wait()), so one rank may wait at once while
// another overlaps. A Comm is used from one thread at a time, like an MPI communicator; several
// Comms may be used from different threads.
//
// Element types: float, double, int32_t, int64_t, uint8_t, and bf16/f16 through core's typed
// pointers (reductions of 16-bit floats accumulate in fp32, comm_types.h).
#include <cstddef>
#include <memory>
#include <vector>

#include "comm/comm_types.h"

namespace ff {

namespace detail {
struct CommState;
class Engine;
class Op;
struct NativeAccess;
}  // namespace detail

// The handle of an asynchronous communication operation.
//
// Contract: the caller must not read or write the operation's buffers until wait() returns
// (or test() has returned true). Destroying a request that was not waited for waits, so a
// request going out of scope can never leave MPI writing into freed memory.
class CommRequest {
 public:
  CommRequest() = default;  // an already complete request (e.g. a collective on one rank)
  ~CommRequest();
  CommRequest(CommRequest&& other) noexcept = default;  // copies the timestamps too
  CommRequest& operator=(CommRequest&& other) noexcept;  // waits for the request it replaces
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;

  // Blocks until complete; the waiting thread then drives all in-flight communication itself
  // (no hand-off to the comm thread). Idempotent.
  void wait();
  // True once complete. A pure check: it makes no MPI call, progress comes from the comm
  // thread, so calling it in a loop is never needed for the operation to finish.
  bool test() const;
  // When the operation started and finished on the monotonic clock, in microseconds; valid once
  // complete (0 for a request that never needed communication). For timelines.
  double started_us() const;
  double completed_us() const;

 private:
  friend class Comm;
  explicit CommRequest(std::shared_ptr<detail::Op> op) : op_(std::move(op)) {}
  std::shared_ptr<detail::Op> op_;
  double started_ = 0, completed_ = 0;  // kept from the op when wait() lets it go
};

// A Comm is a handle to a group. Its operations are const: they do not change which group it
// names (as an MPI_Comm passed by value); the sequence numbers, counters and options they touch
// belong to the group, behind the handle. That lets Mesh hand out `const Comm&` groups.
class Comm {
 public:
  Comm() = default;  // empty: every operation throws until assigned from split()/comm_world()
  ~Comm();
  Comm(Comm&&) noexcept;
  Comm& operator=(Comm&&) noexcept;
  Comm(const Comm&) = delete;  // owns an MPI communicator
  Comm& operator=(const Comm&) = delete;

  int rank() const;
  int size() const;
  // World rank of each rank of this group, in group-rank order.
  const std::vector<int>& world_ranks() const;

  void set_options(const CommOptions& options) const;
  const CommOptions& options() const;
  const CommStats& stats() const;
  void reset_stats() const;

  // Buffers are CommPtr / ConstCommPtr (comm_types.h): a float*, double*, int32_t*, int64_t*,
  // uint8_t* or core TypedPtr converts implicitly and carries its element type along. Each
  // blocking form is its async form followed by wait().

  // In place: every rank ends with the elementwise reduction of all ranks' data.
  void all_reduce(CommPtr data, size_t n, ReduceOp op = ReduceOp::sum) const {
    start_all_reduce(data, n, op, true).wait();
  }
  CommRequest all_reduce_async(CommPtr data, size_t n, ReduceOp op = ReduceOp::sum) const {
    return start_all_reduce(data, n, op, false);
  }
  // in: n_total elements on every rank; out: chunk_range(n_total, size(), rank()).count
  // elements, the reduction of this rank's chunk. out may be in + offset of the own chunk
  // (in place, as ZeRO does on the flat gradient buffer); any other overlap is an error.
  void reduce_scatter(ConstCommPtr in, CommPtr out, size_t n_total, ReduceOp op = ReduceOp::sum) const {
    start_reduce_scatter(in, out, n_total, op, true).wait();
  }
  CommRequest reduce_scatter_async(ConstCommPtr in, CommPtr out, size_t n_total,
                                   ReduceOp op = ReduceOp::sum) const {
    return start_reduce_scatter(in, out, n_total, op, false);
  }
  // in_chunk: this rank's chunk (chunk_range(n_total, size(), rank())); out_full: n_total.
  // in_chunk may already sit at its place inside out_full.
  void all_gather(ConstCommPtr in_chunk, CommPtr out_full, size_t n_total) const {
    start_all_gather(in_chunk, out_full, n_total, true).wait();
  }
  CommRequest all_gather_async(ConstCommPtr in_chunk, CommPtr out_full, size_t n_total) const {
    return start_all_gather(in_chunk, out_full, n_total, false);
  }
  void broadcast(CommPtr data, size_t n, int root) const { start_broadcast(data, n, root, true).wait(); }
  CommRequest broadcast_async(CommPtr data, size_t n, int root) const {
    return start_broadcast(data, n, root, false);
  }
  // in and out hold size() blocks of n_per_rank; block d of in goes to rank d, block s of out
  // comes from rank s.
  void all_to_all(ConstCommPtr in, CommPtr out, size_t n_per_rank) const {
    start_all_to_allv(in, even_counts(n_per_rank), out, even_counts(n_per_rank), CommOpKind::all_to_all, true)
        .wait();
  }
  CommRequest all_to_all_async(ConstCommPtr in, CommPtr out, size_t n_per_rank) const {
    return start_all_to_allv(in, even_counts(n_per_rank), out, even_counts(n_per_rank),
                             CommOpKind::all_to_all, false);
  }
  // Packed blocks: in holds send_counts[0] elements for rank 0, then send_counts[1] for rank
  // 1, ...; out likewise by recv_counts. recv_counts[s] must equal rank s's send_counts[me].
  void all_to_allv(ConstCommPtr in, const std::vector<size_t>& send_counts, CommPtr out,
                   const std::vector<size_t>& recv_counts) const {
    start_all_to_allv(in, send_counts, out, recv_counts, CommOpKind::all_to_allv, true).wait();
  }
  CommRequest all_to_allv_async(ConstCommPtr in, const std::vector<size_t>& send_counts, CommPtr out,
                                const std::vector<size_t>& recv_counts) const {
    return start_all_to_allv(in, send_counts, out, recv_counts, CommOpKind::all_to_allv, false);
  }
  // Point to point; n must equal the matching recv's n. tag in [0, 2^29).
  void send(ConstCommPtr data, size_t n, int dst, int tag = 0) const {
    start_send(data, n, dst, tag, true).wait();
  }
  CommRequest send_async(ConstCommPtr data, size_t n, int dst, int tag = 0) const {
    return start_send(data, n, dst, tag, false);
  }
  void recv(CommPtr data, size_t n, int src, int tag = 0) const {
    start_recv(data, n, src, tag, true).wait();
  }
  CommRequest recv_async(CommPtr data, size_t n, int src, int tag = 0) const {
    return start_recv(data, n, src, tag, false);
  }

  void barrier() const;

  // Collective over this group (blocking): ranks passing the same color form a new group,
  // ordered by (key, rank here). color must be >= 0.
  Comm split(int color, int key) const;
  // The group of `members` (ranks of this group, in the new group's order), made by the members
  // alone: every member calls it with the same list and key, no other rank takes part. key in
  // [0, 1024) tells apart creations of different groups that share ranks.
  Comm subgroup(const std::vector<int>& members, int key) const;

 private:
  friend class detail::Engine;
  friend struct detail::NativeAccess;  // mpi_native.h: the raw communicator for benchmarks
  explicit Comm(std::shared_ptr<detail::CommState> state);

  detail::CommState& state() const;  // throws on an empty Comm
  void count(CommOpKind kind, uint64_t bytes) const;

  // blocking: the caller waits at once, so the engine lets it drive the op (no comm-thread wake-up).
  CommRequest start_all_reduce(CommPtr data, size_t n, ReduceOp op, bool blocking) const;
  CommRequest start_reduce_scatter(ConstCommPtr in, CommPtr out, size_t n_total, ReduceOp op,
                                   bool blocking) const;
  CommRequest start_all_gather(ConstCommPtr in, CommPtr out, size_t n_total, bool blocking) const;
  CommRequest start_broadcast(CommPtr data, size_t n, int root, bool blocking) const;
  CommRequest start_all_to_allv(ConstCommPtr in, const std::vector<size_t>& send_counts, CommPtr out,
                                const std::vector<size_t>& recv_counts, CommOpKind kind, bool blocking) const;
  CommRequest start_send(ConstCommPtr data, size_t n, int dst, int tag, bool blocking) const;
  CommRequest start_recv(CommPtr data, size_t n, int src, int tag, bool blocking) const;
  std::vector<size_t> even_counts(size_t n_per_rank) const {
    return std::vector<size_t>(size_t(size()), n_per_rank);
  }
  CommRequest launch(std::shared_ptr<detail::Op> op, bool blocking) const;

  std::shared_ptr<detail::CommState> state_;
};

}  // namespace ff
