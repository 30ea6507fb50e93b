#pragma once
// Comm: one process group (DESIGN principle 4: a narrow collective interface, MPI behind it).
//
// Every collective must be called by every rank of the group, in the same order, with the same
// n, element type and root (MPI's rule). Blocking and async forms of an operation match each
// other (a blocking call is the async one plus wait()), so one rank may wait at once while
// another overlaps. A Comm is used from one thread at a time, like an MPI communicator; several
// Comms may be used from different threads.
//
// Element types: float, double, int32_t, int64_t, uint8_t through the templates, or any
// CommType through the untyped forms.
#include <cstddef>
#include <memory>
#include <vector>

#include "comm/comm_request.h"
#include "comm/comm_types.h"

namespace ff {

namespace detail {
struct CommState;
class Engine;
struct NativeAccess;
}  // namespace detail

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

  // ---- typed forms ----
  // In place: every rank ends with the elementwise reduction of all ranks' data.
  template <typename T>
  void all_reduce(T* data, size_t n, ReduceOp op = ReduceOp::sum) const {
    all_reduce(data, n, comm_type_of<T>(), op);
  }
  template <typename T>
  CommRequest all_reduce_async(T* data, size_t n, ReduceOp op = ReduceOp::sum) const {
    return all_reduce_async(data, n, comm_type_of<T>(), op);
  }
  // in: n_total elements on every rank; out: chunk_range(n_total, size(), rank()).count
  // elements, the reduction of this rank's chunk. out may be in + offset of the own chunk
  // (in place, as ZeRO does on the flat gradient buffer); any other overlap is an error.
  template <typename T>
  void reduce_scatter(const T* in, T* out, size_t n_total, ReduceOp op = ReduceOp::sum) const {
    reduce_scatter(in, out, n_total, comm_type_of<T>(), op);
  }
  template <typename T>
  CommRequest reduce_scatter_async(const T* in, T* out, size_t n_total, ReduceOp op = ReduceOp::sum) const {
    return reduce_scatter_async(in, out, n_total, comm_type_of<T>(), op);
  }
  // in_chunk: this rank's chunk (chunk_range(n_total, size(), rank())); out_full: n_total.
  // in_chunk may already sit at its place inside out_full.
  template <typename T>
  void all_gather(const T* in_chunk, T* out_full, size_t n_total) const {
    all_gather(in_chunk, out_full, n_total, comm_type_of<T>());
  }
  template <typename T>
  CommRequest all_gather_async(const T* in_chunk, T* out_full, size_t n_total) const {
    return all_gather_async(in_chunk, out_full, n_total, comm_type_of<T>());
  }
  template <typename T>
  void broadcast(T* data, size_t n, int root) const {
    broadcast(data, n, comm_type_of<T>(), root);
  }
  template <typename T>
  CommRequest broadcast_async(T* data, size_t n, int root) const {
    return broadcast_async(data, n, comm_type_of<T>(), root);
  }
  // in and out hold size() blocks of n_per_rank; block d of in goes to rank d, block s of out
  // comes from rank s.
  template <typename T>
  void all_to_all(const T* in, T* out, size_t n_per_rank) const {
    all_to_all(in, out, n_per_rank, comm_type_of<T>());
  }
  template <typename T>
  CommRequest all_to_all_async(const T* in, T* out, size_t n_per_rank) const {
    return all_to_all_async(in, out, n_per_rank, comm_type_of<T>());
  }
  // Packed blocks: in holds send_counts[0] elements for rank 0, then send_counts[1] for rank
  // 1, ...; out likewise by recv_counts. recv_counts[s] must equal rank s's send_counts[me].
  template <typename T>
  void all_to_allv(const T* in, const std::vector<size_t>& send_counts, T* out,
                   const std::vector<size_t>& recv_counts) const {
    all_to_allv(in, send_counts, out, recv_counts, comm_type_of<T>());
  }
  template <typename T>
  CommRequest all_to_allv_async(const T* in, const std::vector<size_t>& send_counts, T* out,
                                const std::vector<size_t>& recv_counts) const {
    return all_to_allv_async(in, send_counts, out, recv_counts, comm_type_of<T>());
  }
  // Point to point; n must equal the matching recv's n. tag in [0, 2^29).
  template <typename T>
  void send(const T* data, size_t n, int dst, int tag = 0) const {
    send(data, n, comm_type_of<T>(), dst, tag);
  }
  template <typename T>
  CommRequest send_async(const T* data, size_t n, int dst, int tag = 0) const {
    return send_async(data, n, comm_type_of<T>(), dst, tag);
  }
  template <typename T>
  void recv(T* data, size_t n, int src, int tag = 0) const {
    recv(data, n, comm_type_of<T>(), src, tag);
  }
  template <typename T>
  CommRequest recv_async(T* data, size_t n, int src, int tag = 0) const {
    return recv_async(data, n, comm_type_of<T>(), src, tag);
  }

  void barrier() const;

  // ---- untyped forms (same semantics) ----
  void all_reduce(void* data, size_t n, CommType type, ReduceOp op = ReduceOp::sum) const;
  CommRequest all_reduce_async(void* data, size_t n, CommType type, ReduceOp op = ReduceOp::sum) const;
  void reduce_scatter(const void* in, void* out, size_t n_total, CommType type,
                      ReduceOp op = ReduceOp::sum) const;
  CommRequest reduce_scatter_async(const void* in, void* out, size_t n_total, CommType type,
                                   ReduceOp op = ReduceOp::sum) const;
  void all_gather(const void* in_chunk, void* out_full, size_t n_total, CommType type) const;
  CommRequest all_gather_async(const void* in_chunk, void* out_full, size_t n_total, CommType type) const;
  void broadcast(void* data, size_t n, CommType type, int root) const;
  CommRequest broadcast_async(void* data, size_t n, CommType type, int root) const;
  void all_to_all(const void* in, void* out, size_t n_per_rank, CommType type) const;
  CommRequest all_to_all_async(const void* in, void* out, size_t n_per_rank, CommType type) const;
  void all_to_allv(const void* in, const std::vector<size_t>& send_counts, void* out,
                   const std::vector<size_t>& recv_counts, CommType type) const;
  CommRequest all_to_allv_async(const void* in, const std::vector<size_t>& send_counts, void* out,
                                const std::vector<size_t>& recv_counts, CommType type) const;
  void send(const void* data, size_t n, CommType type, int dst, int tag = 0) const;
  CommRequest send_async(const void* data, size_t n, CommType type, int dst, int tag = 0) const;
  void recv(void* data, size_t n, CommType type, int src, int tag = 0) const;
  CommRequest recv_async(void* data, size_t n, CommType type, int src, int tag = 0) const;

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

  CommRequest start_all_reduce(void* data, size_t n, CommType type, ReduceOp op, bool blocking) const;
  CommRequest start_reduce_scatter(const void* in, void* out, size_t n_total, CommType type,
                                   ReduceOp op, bool blocking) const;
  CommRequest start_all_gather(const void* in, void* out, size_t n_total, CommType type, bool blocking) const;
  CommRequest start_broadcast(void* data, size_t n, CommType type, int root, bool blocking) const;
  CommRequest start_all_to_allv(const void* in, const std::vector<size_t>& send_counts, void* out,
                                const std::vector<size_t>& recv_counts, CommType type,
                                CommOpKind kind, bool blocking) const;
  CommRequest start_send(const void* data, size_t n, CommType type, int dst, int tag, bool blocking) const;
  CommRequest start_recv(void* data, size_t n, CommType type, int src, int tag, bool blocking) const;
  CommRequest launch(std::shared_ptr<detail::Op> op, bool blocking) const;

  std::shared_ptr<detail::CommState> state_;
};

}  // namespace ff
