#pragma once
// Internal: what every operation is made of. The state behind a Comm handle (its communicator,
// tags and counters), MPI error checks, the Op state machine the engine drives, the request set an
// Op tests with one MPI call, and the makers of the operations, each defined beside its algorithm:
// collectives.cpp (reduce-scatter, all-gather, all-reduce; their arithmetic in reduce.cpp),
// hierarchical*.cpp (their node-first forms across nodes, built with composite_ops.cpp),
// exchange.cpp (send, recv, all-to-all(v), MPI's nonblocking broadcast and barrier), groups.cpp
// (split, subgroup).
//
// Threads: the engine calls an Op's start() once and then progress() repeatedly, always on the
// thread holding the MPI token (the comm thread or a thread blocked in wait()); nothing in an Op
// is touched by two threads at once except `complete`, which publishes the result. Ops keep a
// shared_ptr to their CommState, so the MPI communicator outlives every operation started on it
// even if the Comm object is destroyed first.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_types.h"

namespace ff::detail {

// Tag layout on every communicator. Collective traffic and split bookkeeping live above the
// user's point-to-point tags, so a user recv can never match a collective's message.
constexpr int kUserTagLimit = 1 << 29;                       // user tags: [0, 2^29)
constexpr int kCollTagBase = kUserTagLimit;                   // collectives: 2 phases x seq window
constexpr uint64_t kSeqWindow = uint64_t(1) << 20;
constexpr int kSplitTagBase = kCollTagBase + int(2 * kSeqWindow);
constexpr int kSubgroupTagBase = kSplitTagBase + int(kSeqWindow);  // + the caller's group key
constexpr int kSubgroupKeys = 1 << 10;
// Keys of the groups this layer makes for itself (hierarchical.cpp), above the caller's keys.
constexpr int kInternalKeyInsideNode = kSubgroupKeys;
constexpr int kInternalKeyAcrossNodes = kSubgroupKeys + 1;
constexpr int kTagsNeeded = kSubgroupTagBase + kSubgroupKeys + 2;  // checked against MPI_TAG_UB

struct CommState;
// The two groups the node-first collectives run on (hierarchical.cpp): the group's ranks on this
// node, and this rank's peers at the same place on every node.
struct NodeHierarchy {
  std::shared_ptr<CommState> inside, across;
  // ranks[k][i]: the parent group's rank at place i on node k (nodes in the order of `across`,
  // places in the order of `inside`: this rank is ranks[across->rank][inside->rank]).
  std::vector<std::vector<int>> ranks;
};

struct CommState {
  CommState(MPI_Comm comm, std::vector<int> world_ranks);
  ~CommState();  // frees the MPI communicator (through the engine's MPI token)
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::vector<int> world_ranks;  // world rank of each rank of this group

  // Every rank issues the collectives of one communicator in the same order (MPI's rule), so
  // this counter agrees across ranks and gives each collective its own tag: messages of two
  // collectives in flight at once can then never be confused. Touched by the caller thread.
  uint64_t next_seq = 0;
  uint64_t next_split = 0;
  uint64_t last_bytes = 0;  // the payload of the operation counted last (for the flight recorder)

  CommOptions options;
  CommStats stats;  // cross_node_* filled in from the atomics below when read (Comm::stats)

  // Whether each rank of this group lives on another node than this process, and what was sent
  // to such ranks. Sends start on whichever thread holds the MPI token, hence atomics.
  std::vector<uint8_t> peer_off_node;
  std::atomic<uint64_t> cross_node_bytes{0};
  std::atomic<uint64_t> cross_node_messages{0};
  // A group made by this layer for another one's algorithm also counts its cross-node sends
  // there (it outlives this group: it owns it through `hierarchy`).
  CommState* counts_into = nullptr;

  // spans_nodes_evenly(*this), found once at construction.
  bool spans_nodes_evenly = false;
  // Made on the first node-first collective (hierarchical.cpp); null until then.
  std::unique_ptr<NodeHierarchy> hierarchy;
};

// Node of every world rank and each node's host name (nodes.cpp), asked once by init_comm before
// the world Comm exists.
struct NodeMap {
  std::vector<int> rank_nodes;
  std::vector<std::string> names;
};
NodeMap discover_nodes(MPI_Comm world);
// Counts a message of `bytes` to group rank `peer` when that rank is on another node.
void note_cross_node_send(CommState& s, int peer, size_t bytes);

// Tag of phase `phase` (0 or 1) of the collective with sequence number `seq`.
inline int coll_tag(uint64_t seq, int phase) {
  return kCollTagBase + int((seq % kSeqWindow) * 2) + phase;
}

// ---- MPI error checks ----
// Every communicator of this layer uses MPI_ERRORS_RETURN, so MPI hands the code back to us and
// the message can name the fivefold operation, not only the MPI call (comm_world.cpp).
std::string mpi_error_string(int code);

[[noreturn]] void fail_mpi(int rc, const char* call, const std::string& during);

// Ends the job (abort_job) when rc is not MPI_SUCCESS. `during()` names what was being done;
// it is a callable so the hot path (one call per message segment) builds no string.
template <typename Describe>
inline void check_mpi(int rc, const char* call, Describe&& during) {
  if (rc != MPI_SUCCESS) [[unlikely]] fail_mpi(rc, call, during());
}

// MPI counts are int; this layer splits larger buffers itself, so a count that does not fit
// is a bug here, not a caller error.
int mpi_count(size_t n);

MPI_Datatype mpi_type(CommType t);

// ---- operations ----

class Op {
 public:
  Op(std::shared_ptr<CommState> comm, CommOpKind kind) : comm_(std::move(comm)), kind_(kind) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Posts the first messages. May finish the op at once (set finished_).
  virtual void start() = 0;
  // Tests outstanding messages and posts the next ones; returns true if anything moved, which
  // the engine uses to decide between polling again and backing off.
  virtual bool progress() = 0;
  // For timeouts and errors: "all_reduce of 4096 f32 (sum) on a group of 2".
  virtual std::string describe() const;
  // Scratch buffers go back to the engine's pool here (called with the token held).
  virtual void release() {}

  bool finished() const { return finished_; }
  const std::shared_ptr<CommState>& comm() const { return comm_; }
  CommOpKind kind() const { return kind_; }

  // Set (release) by the driver after finished(); read (acquire) by wait() and test().
  std::atomic<bool> complete{false};
  // When the driver started and retired the op, in microseconds of the monotonic clock (the
  // clock traces use), so a timeline can show when the transfer really ran. Written before
  // `complete` is released, read after it is acquired.
  double started_us = 0, completed_us = 0;
  uint64_t flight_id = 0;  // its entry in the flight recorder (flight_recorder.h)

 protected:
  std::shared_ptr<CommState> comm_;
  CommOpKind kind_;
  bool finished_ = false;
};

// The MPI requests of one operation, tested together with one MPI_Testsome per pass (one pass into
// Open MPI's progress engine instead of one per message), each tagged with a caller-chosen token
// that says what completed.
class RequestSet {
 public:
  void add(MPI_Request request, uint64_t token) {
    int slot;
    if (free_.empty()) {
      slot = int(reqs_.size());
      reqs_.push_back(request);
      tokens_.push_back(token);
    } else {
      slot = free_.back();
      free_.pop_back();
      reqs_[size_t(slot)] = request;
      tokens_[size_t(slot)] = token;
    }
    ++live_;
  }

  size_t live() const { return live_; }

  // Calls on_done(token, status, error) for every request that completed; error is
  // MPI_SUCCESS unless MPI reported a per-request failure (e.g. truncation). Returns how many
  // completed. `during` describes the op for a failure of MPI_Testsome itself.
  template <typename OnDone, typename Describe>
  int test_some(OnDone&& on_done, Describe&& during) {
    if (live_ == 0) return 0;
    idx_.resize(reqs_.size());
    statuses_.resize(reqs_.size());
    int count = 0;
    int rc = MPI_Testsome(int(reqs_.size()), reqs_.data(), &count, idx_.data(), statuses_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) fail_mpi(rc, "MPI_Testsome", during());
    if (count == MPI_UNDEFINED) return 0;
    for (int i = 0; i < count; ++i) {
      int slot = idx_[size_t(i)];
      const MPI_Status& st = statuses_[size_t(i)];
      int error = rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : MPI_SUCCESS;
      free_.push_back(slot);
      --live_;
      on_done(tokens_[size_t(slot)], st, error);
    }
    return count;
  }

 private:
  std::vector<MPI_Request> reqs_;  // completed slots hold MPI_REQUEST_NULL until reused
  std::vector<uint64_t> tokens_;
  std::vector<int> free_;
  std::vector<int> idx_;
  std::vector<MPI_Status> statuses_;
  size_t live_ = 0;
};

// ---- the makers ----

// collectives.cpp. reduce_scatter: in = n_total elements, out = this rank's chunk; all_gather:
// in = this rank's chunk, out = n_total elements; all_reduce: in == out = n_total elements.
enum class PairwiseMode { reduce_scatter, all_gather, all_reduce };
std::shared_ptr<Op> make_pairwise(PairwiseMode mode, std::shared_ptr<CommState> comm, const void* in,
                                  void* out, size_t n_total, CommType type, ReduceOp op, uint64_t seq);

// hierarchical.cpp. Whether the group has ranks on two or more nodes and equally many (two or
// more) on each: the shape the node-first collectives need.
bool group_spans_nodes_evenly(const CommState& s);
// The group's node hierarchy, made on first use: a blocking collective over the group, so it is
// called from the caller's thread in the order of the collectives (every rank alike).
NodeHierarchy& node_hierarchy(const std::shared_ptr<CommState>& s);
// Reduce-scatter inside the node, all-reduce across nodes, all-gather inside the node.
std::shared_ptr<Op> make_hierarchical_all_reduce(const std::shared_ptr<CommState>& comm, void* data,
                                                 size_t n, CommType type, ReduceOp op);
// The node-first reduce-scatter and all-gather cut every chunk of chunk_range(n, parts, owner)
// into `blocks` pieces alike; piece `block` of the owner's chunk, in the whole buffer.
ChunkRange block_piece(size_t n, int parts, int owner, int blocks, int block);
// How many such blocks a buffer of `bytes` is cut into, and how many of them run at once.
int node_first_blocks(size_t bytes);
constexpr size_t kNodeFirstWindow = 4;
// hierarchical_all_gather.cpp: each rank's chunk across to its peers on the other nodes, then
// every chunk a rank holds to the other ranks of its node. Bitwise the flat result.
std::shared_ptr<Op> make_hierarchical_all_gather(const std::shared_ptr<CommState>& comm, const void* in,
                                                 void* out, size_t n, CommType type);
// hierarchical_reduce_scatter.cpp: the node's sum of the chunks owned by a rank's peers on every
// node, reduced inside the node onto that rank, then those sums across to their owners.
std::shared_ptr<Op> make_hierarchical_reduce_scatter(const std::shared_ptr<CommState>& comm, const void* in,
                                                     void* out, size_t n, CommType type, ReduceOp op);

// reduce.cpp. Elementwise reductions used by the collectives, dst[i] = a[i] (op) b[i]. dst may
// alias a (the in-place accumulate of all_reduce). The order of operands is fixed by the
// caller, which is what keeps every collective's result bitwise reproducible.
// For every type except bf16/f16.
void reduce_into(void* dst, const void* a, const void* b, size_t n, CommType type, ReduceOp op);

// bf16/f16 reduce in fp32: acc[i] = (a ? widen(a[i]) : acc[i]) (op) widen(b[i]), so the first
// step of a chunk widens both operands and every later one folds into the fp32 accumulator;
// narrow_into then rounds each element once (round-to-nearest-even) into the 16-bit result.
void reduce_widened(float* acc, const void* a, const void* b, size_t n, CommType type, ReduceOp op);
void narrow_into(void* dst, const float* acc, size_t n, CommType type);

// exchange.cpp. A fixed set of sends and receives posted at once and finished together.
struct Transfer {
  int peer;
  std::byte* data;  // read for sends, written for receives
  size_t count;     // elements
};
// MPI counts are int: buffers above this are sent as several messages, cut alike on both sides.
constexpr size_t kMaxMessageBytes = size_t(1) << 30;
std::shared_ptr<Op> make_exchange(std::shared_ptr<CommState> comm, CommOpKind kind, CommType type, int tag,
                                  std::vector<Transfer> sends, std::vector<Transfer> recvs, std::string what);
// An MPI nonblocking collective (broadcast, barrier): `post` starts it and appends its requests.
using NbcPoster = std::function<void(MPI_Comm, std::vector<MPI_Request>&)>;
std::shared_ptr<Op> make_nbc(std::shared_ptr<CommState> comm, CommOpKind kind, NbcPoster post,
                             std::string what);

// composite_ops.cpp. Operations made of operations: `stages` one after another; `parts` side by
// side, started in order with at most `window` unfinished at once; `work` on local memory alone
// (a reduction of received data), done when started.
std::shared_ptr<Op> make_staged(std::shared_ptr<CommState> comm, CommOpKind kind,
                                std::vector<std::shared_ptr<Op>> stages, std::string what);
std::shared_ptr<Op> make_concurrent(std::shared_ptr<CommState> comm, CommOpKind kind,
                                    std::vector<std::shared_ptr<Op>> parts, size_t window, std::string what);
std::shared_ptr<Op> make_local(std::shared_ptr<CommState> comm, CommOpKind kind, std::function<void()> work,
                               std::string what);

// groups.cpp. Blocking: run through the engine and waited for.
std::shared_ptr<CommState> split_group(const std::shared_ptr<CommState>& parent, int color, int key);
std::shared_ptr<CommState> member_group(const std::shared_ptr<CommState>& parent, std::vector<int> members,
                                        int key);

}  // namespace ff::detail
