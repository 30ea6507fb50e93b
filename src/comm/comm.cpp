#include "comm/comm.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/engine.h"
#include "comm/flight_recorder.h"
#include "comm/op.h"

namespace ff {
namespace {

using detail::kMaxMessageBytes;
using detail::Transfer;

std::string group_text(const detail::CommState& s) {
  return "a group of " + std::to_string(s.size);
}

void require_buffer(const void* p, size_t n, const char* op, const char* name) {
  if (n > 0 && p == nullptr) {
    throw std::invalid_argument(std::string(op) + ": " + name + " is null but n = " +
                                std::to_string(n) + "; pass a buffer of n elements");
  }
}

void require_rank(int rank, int size, const char* op, const char* what) {
  if (rank < 0 || rank >= size) {
    throw std::invalid_argument(std::string(op) + ": " + what + " " + std::to_string(rank) +
                                " is not a rank of this group (size " + std::to_string(size) +
                                "); use a rank in [0, size())");
  }
}

void require_tag(int tag, const char* op) {
  if (tag < 0 || tag >= detail::kUserTagLimit) {
    throw std::invalid_argument(std::string(op) + ": tag " + std::to_string(tag) +
                                " is outside [0, 2^29); tags above are reserved for collectives");
  }
}

// Operations with an input and an output buffer move one element type: mixing them would
// reinterpret bytes.
CommType same_type(ConstCommPtr in, CommPtr out, const char* op) {
  if (in.type() != out.type()) {
    throw std::invalid_argument(std::string(op) + ": in holds " + comm_type_name(in.type()) +
                                " but out holds " + comm_type_name(out.type()) +
                                "; pass buffers of one element type");
  }
  return in.type();
}

// Across nodes, buffers of at least min_bytes go node first (hierarchical*.cpp) in a group with
// equally many ranks (two or more) on each node. Not reductions of 16-bit floats: their sum is
// rounded once, and two stages would round twice.
bool node_first(const detail::CommState& s, size_t n, CommType type, bool reduces, size_t min_bytes) {
  return s.spans_nodes_evenly && !(reduces && reduces_in_f32(type)) && n >= size_t(s.size) &&
         n * comm_type_size(type) >= min_bytes;
}

}  // namespace

CommRequest::~CommRequest() { wait(); }

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    wait();
    op_ = std::move(other.op_);
    started_ = other.started_;
    completed_ = other.completed_;
  }
  return *this;
}

void CommRequest::wait() {
  if (!op_) return;
  detail::Engine::instance().wait(*op_);
  started_ = op_->started_us;
  completed_ = op_->completed_us;
  op_.reset();
}

bool CommRequest::test() const { return !op_ || op_->complete.load(std::memory_order_acquire); }

double CommRequest::started_us() const { return op_ ? op_->started_us : started_; }
double CommRequest::completed_us() const { return op_ ? op_->completed_us : completed_; }

// ---- Comm ----

Comm::Comm(std::shared_ptr<detail::CommState> state) : state_(std::move(state)) {}
Comm::~Comm() = default;
Comm::Comm(Comm&&) noexcept = default;
Comm& Comm::operator=(Comm&&) noexcept = default;

detail::CommState& Comm::state() const {
  if (!state_) {
    throw std::logic_error("operation on an empty Comm; obtain one from comm_world() or split()");
  }
  return *state_;
}

int Comm::rank() const { return state().rank; }
int Comm::size() const { return state().size; }
const std::vector<int>& Comm::world_ranks() const { return state().world_ranks; }
void Comm::set_options(const CommOptions& options) const { state().options = options; }
const CommOptions& Comm::options() const { return state().options; }
const CommStats& Comm::stats() const {
  detail::CommState& s = state();
  s.stats.cross_node_bytes = s.cross_node_bytes.load(std::memory_order_relaxed);
  s.stats.cross_node_messages = s.cross_node_messages.load(std::memory_order_relaxed);
  return s.stats;
}
void Comm::reset_stats() const {
  detail::CommState& s = state();
  s.stats = CommStats{};
  s.cross_node_bytes.store(0, std::memory_order_relaxed);
  s.cross_node_messages.store(0, std::memory_order_relaxed);
}

void Comm::count(CommOpKind kind, uint64_t bytes) const {
  auto& st = state().stats;
  st.bytes[size_t(kind)] += bytes;
  st.calls[size_t(kind)] += 1;
  state().last_bytes = bytes;
}

CommRequest Comm::launch(std::shared_ptr<detail::Op> op, bool blocking) const {
  // Collectives carry the group's sequence number; a send or recv its count of that kind here.
  const detail::CommState& s = state();
  const CommOpKind kind = op->kind();
  const bool p2p = kind == CommOpKind::send || kind == CommOpKind::recv;
  const uint64_t seq = p2p ? s.stats.calls_of(kind) - 1 : s.next_seq - 1;
  op->flight_id = FlightRecorder::instance().begin(kind, s.world_ranks, seq, s.last_bytes, op);
  detail::Engine::instance().submit(op, blocking);
  return CommRequest(std::move(op));
}

// ---- all_reduce / reduce_scatter / all_gather ----

CommRequest Comm::start_all_reduce(CommPtr buf, size_t n, ReduceOp op, bool blocking) const {
  auto& s = state();
  void* data = buf.data();
  CommType type = buf.type();
  require_buffer(data, n, "all_reduce", "data");
  count(CommOpKind::all_reduce, n * comm_type_size(type));
  uint64_t seq = s.next_seq++;
  if (s.size == 1 || n == 0) return {};
  if (node_first(s, n, type, true, s.options.hierarchical_min_bytes)) {
    detail::node_hierarchy(state_);  // on first use a collective of its own: before the op is made
    return launch(detail::make_hierarchical_all_reduce(state_, data, n, type, op), blocking);
  }
  return launch(detail::make_pairwise(detail::PairwiseMode::all_reduce, state_,
                                                     data, data, n, type, op, seq),
                blocking);
}

CommRequest Comm::start_reduce_scatter(ConstCommPtr in_buf, CommPtr out_buf, size_t n_total, ReduceOp op,
                                       bool blocking) const {
  auto& s = state();
  CommType type = same_type(in_buf, out_buf, "reduce_scatter");
  const void* in = in_buf.data();
  void* out = out_buf.data();
  require_buffer(in, n_total, "reduce_scatter", "in");
  require_buffer(out, chunk_range(n_total, s.size, s.rank).count, "reduce_scatter", "out");
  count(CommOpKind::reduce_scatter, n_total * comm_type_size(type));
  uint64_t seq = s.next_seq++;
  if (s.size == 1) {
    if (n_total > 0 && in != out) std::memmove(out, in, n_total * comm_type_size(type));
    return {};
  }
  if (n_total == 0) return {};
  if (node_first(s, n_total, type, true, s.options.hierarchical_reduce_scatter_min_bytes)) {
    detail::node_hierarchy(state_);  // on first use a collective of its own: before the op is made
    return launch(detail::make_hierarchical_reduce_scatter(state_, in, out, n_total, type, op), blocking);
  }
  return launch(detail::make_pairwise(detail::PairwiseMode::reduce_scatter,
                                                     state_, in, out, n_total, type, op, seq),
                blocking);
}

CommRequest Comm::start_all_gather(ConstCommPtr in_buf, CommPtr out_buf, size_t n_total,
                                   bool blocking) const {
  auto& s = state();
  CommType type = same_type(in_buf, out_buf, "all_gather");
  const void* in = in_buf.data();
  void* out = out_buf.data();
  ChunkRange mine = chunk_range(n_total, s.size, s.rank);
  require_buffer(in, mine.count, "all_gather", "in_chunk");
  require_buffer(out, n_total, "all_gather", "out_full");
  count(CommOpKind::all_gather, mine.count * comm_type_size(type));
  uint64_t seq = s.next_seq++;
  if (s.size == 1) {
    if (n_total > 0 && in != out) std::memmove(out, in, n_total * comm_type_size(type));
    return {};
  }
  if (n_total == 0) return {};
  if (node_first(s, n_total, type, false, s.options.hierarchical_all_gather_min_bytes)) {
    detail::node_hierarchy(state_);
    return launch(detail::make_hierarchical_all_gather(state_, in, out, n_total, type), blocking);
  }
  return launch(detail::make_pairwise(detail::PairwiseMode::all_gather, state_,
                                                     in, out, n_total, type, ReduceOp::sum, seq),
                blocking);
}

// ---- broadcast / barrier ----

CommRequest Comm::start_broadcast(CommPtr buf, size_t n, int root, bool blocking) const {
  auto& s = state();
  void* data = buf.data();
  CommType type = buf.type();
  require_rank(root, s.size, "broadcast", "root");
  require_buffer(data, n, "broadcast", "data");
  count(CommOpKind::broadcast, s.rank == root ? n * comm_type_size(type) : 0);
  s.next_seq++;
  if (s.size == 1 || n == 0) return {};
  size_t es = comm_type_size(type);
  auto poster = [data, n, type, root, es](MPI_Comm comm, std::vector<MPI_Request>& reqs) {
    // MPI counts are int: pieces of at most 1 GiB, all posted at once (libnbc runs them
    // concurrently and every rank cuts the same way).
    size_t piece = kMaxMessageBytes / es;
    for (size_t off = 0; off < n; off += piece) {
      MPI_Request req;
      detail::check_mpi(MPI_Ibcast(static_cast<std::byte*>(data) + off * es,
                                   detail::mpi_count(std::min(piece, n - off)),
                                   detail::mpi_type(type), root, comm, &req),
                        "MPI_Ibcast", [] { return std::string("broadcast"); });
      reqs.push_back(req);
    }
  };
  std::string what = "broadcast of " + std::to_string(n) + " " + comm_type_name(type) +
                     " from rank " + std::to_string(root) + " on " + group_text(s);
  return launch(detail::make_nbc(state_, CommOpKind::broadcast, poster, what), blocking);
}

void Comm::barrier() const {
  auto& s = state();
  count(CommOpKind::barrier, 0);
  s.next_seq++;
  if (s.size == 1) return;
  auto poster = [](MPI_Comm comm, std::vector<MPI_Request>& reqs) {
    MPI_Request req;
    detail::check_mpi(MPI_Ibarrier(comm, &req), "MPI_Ibarrier", [] { return std::string("barrier"); });
    reqs.push_back(req);
  };
  launch(detail::make_nbc(state_, CommOpKind::barrier, poster,
                                         "barrier on " + group_text(s)),
         true)
      .wait();
}

// ---- all_to_all(v) ----

CommRequest Comm::start_all_to_allv(ConstCommPtr in_buf, const std::vector<size_t>& send_counts,
                                    CommPtr out_buf, const std::vector<size_t>& recv_counts, CommOpKind kind,
                                    bool blocking) const {
  auto& s = state();
  const char* name = comm_op_name(kind);
  CommType type = same_type(in_buf, out_buf, name);
  const void* in = in_buf.data();
  void* out = out_buf.data();
  if (send_counts.size() != size_t(s.size) || recv_counts.size() != size_t(s.size)) {
    throw std::invalid_argument(std::string(name) + ": send_counts has " +
                                std::to_string(send_counts.size()) + " entries and recv_counts " +
                                std::to_string(recv_counts.size()) + " but the group has " +
                                std::to_string(s.size) + " ranks; pass one count per rank");
  }
  size_t es = comm_type_size(type);
  size_t send_total = std::accumulate(send_counts.begin(), send_counts.end(), size_t(0));
  size_t recv_total = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t(0));
  require_buffer(in, send_total, name, "in");
  require_buffer(out, recv_total, name, "out");
  count(kind, send_total * es);
  uint64_t seq = s.next_seq++;

  std::vector<Transfer> sends, recvs;
  size_t send_off = 0, recv_off = 0;
  std::vector<size_t> send_offsets(size_t(s.size)), recv_offsets(size_t(s.size));
  for (int q = 0; q < s.size; ++q) {
    send_offsets[size_t(q)] = send_off;
    recv_offsets[size_t(q)] = recv_off;
    send_off += send_counts[size_t(q)];
    recv_off += recv_counts[size_t(q)];
  }
  // Our own block is a local copy; its two counts must agree like any peer's.
  size_t me = size_t(s.rank);
  if (send_counts[me] != recv_counts[me]) {
    throw std::invalid_argument(std::string(name) + ": send_counts[" + std::to_string(me) +
                                "] = " + std::to_string(send_counts[me]) + " but recv_counts[" +
                                std::to_string(me) + "] = " + std::to_string(recv_counts[me]) +
                                "; the block a rank sends to itself must have one size");
  }
  auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  if (send_counts[me] > 0) {
    std::memmove(dst + recv_offsets[me] * es, src + send_offsets[me] * es, send_counts[me] * es);
  }
  // Peers in the order r+1, r+2, ...: every rank starts with a different partner.
  for (int k = 1; k < s.size; ++k) {
    int to = (s.rank + k) % s.size;
    int from = (s.rank - k + s.size) % s.size;
    if (send_counts[size_t(to)] > 0) {
      sends.push_back({to, const_cast<std::byte*>(src + send_offsets[size_t(to)] * es),
                       send_counts[size_t(to)]});
    }
    if (recv_counts[size_t(from)] > 0) {
      recvs.push_back({from, dst + recv_offsets[size_t(from)] * es, recv_counts[size_t(from)]});
    }
  }
  if (sends.empty() && recvs.empty()) return {};
  std::string what = std::string(name) + " of " + std::to_string(send_total) + " " +
                     comm_type_name(type) + " on " + group_text(s);
  return launch(detail::make_exchange(state_, kind, type, detail::coll_tag(seq, 0),
                                             std::move(sends), std::move(recvs), what),
                blocking);
}

// ---- point to point ----

CommRequest Comm::start_send(ConstCommPtr buf, size_t n, int dst, int tag, bool blocking) const {
  auto& s = state();
  const void* data = buf.data();
  CommType type = buf.type();
  require_rank(dst, s.size, "send", "dst");
  require_tag(tag, "send");
  require_buffer(data, n, "send", "data");
  count(CommOpKind::send, n * comm_type_size(type));
  if (n == 0) return {};
  std::string what = "send of " + std::to_string(n) + " " + comm_type_name(type) + " to rank " +
                     std::to_string(dst) + " (tag " + std::to_string(tag) + ") on " + group_text(s);
  std::vector<Transfer> sends{{dst, static_cast<std::byte*>(const_cast<void*>(data)), n}};
  return launch(detail::make_exchange(state_, CommOpKind::send, type, tag, std::move(sends),
                                             std::vector<Transfer>{}, what),
                blocking);
}

CommRequest Comm::start_recv(CommPtr buf, size_t n, int src, int tag, bool blocking) const {
  auto& s = state();
  void* data = buf.data();
  CommType type = buf.type();
  require_rank(src, s.size, "recv", "src");
  require_tag(tag, "recv");
  require_buffer(data, n, "recv", "data");
  count(CommOpKind::recv, 0);
  if (n == 0) return {};
  std::string what = "recv of " + std::to_string(n) + " " + comm_type_name(type) + " from rank " +
                     std::to_string(src) + " (tag " + std::to_string(tag) + ") on " + group_text(s);
  std::vector<Transfer> recvs{{src, static_cast<std::byte*>(data), n}};
  return launch(detail::make_exchange(state_, CommOpKind::recv, type, tag,
                                             std::vector<Transfer>{}, std::move(recvs), what),
                blocking);
}

// ---- split ----

Comm Comm::split(int color, int key) const {
  state();  // an empty Comm throws here
  if (color < 0) {
    throw std::invalid_argument("split: color " + std::to_string(color) +
                                " is negative; every rank must join a group (color >= 0)");
  }
  return Comm(detail::split_group(state_, color, key));
}

Comm Comm::subgroup(const std::vector<int>& members, int key) const {
  auto& s = state();
  if (key < 0 || key >= detail::kSubgroupKeys)
    throw std::invalid_argument("subgroup: key " + std::to_string(key) + " is outside [0, " +
                                std::to_string(detail::kSubgroupKeys) + ")");
  if (std::find(members.begin(), members.end(), s.rank) == members.end())
    throw std::invalid_argument("subgroup: rank " + std::to_string(s.rank) +
                                " asked for a group it is not a member of");
  for (int m : members)
    if (m < 0 || m >= s.size)
      throw std::invalid_argument("subgroup: member " + std::to_string(m) + " is not a rank of a group of " +
                                  std::to_string(s.size));
  return Comm(detail::member_group(state_, members, key));
}

}  // namespace ff
