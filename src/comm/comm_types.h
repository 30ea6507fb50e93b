#pragma once
// Value types of the communication layer: element types, reduction ops, options, statistics
// and the chunking rule shared by reduce_scatter and all_gather. No MPI here, so every layer
// (and the MPI-free unit tests) can include it.
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace ff {

// bf16 and f16 travel as 16-bit words; their reductions widen every contribution to fp32, combine
// them in the algorithm's fixed order and round once (RNE), so p ranks cost one rounding, not p-1.
enum class CommType { f32, f64, i32, i64, u8, bf16, f16 };
enum class ReduceOp { sum, max, min };

size_t comm_type_size(CommType t);
const char* comm_type_name(CommType t);
const char* reduce_op_name(ReduceOp op);
CommType comm_type_of(DType t);  // core's element types: f32, bf16, f16
inline bool reduces_in_f32(CommType t) { return t == CommType::bf16 || t == CommType::f16; }

// The buffer of a Comm operation: an address and its element type. Implicitly built from a pointer
// to a supported element type or from core's typed pointers, so `comm.all_reduce(x.data(), n)`
// reads as it always did while one declaration per operation serves every type. Any other
// pointer type (a size_t*, a char*) does not convert: a compile error, never a reinterpretation.
class CommPtr {
 public:
  CommPtr(float* p) : data_(p), type_(CommType::f32) {}
  CommPtr(double* p) : data_(p), type_(CommType::f64) {}
  CommPtr(int32_t* p) : data_(p), type_(CommType::i32) {}
  CommPtr(int64_t* p) : data_(p), type_(CommType::i64) {}
  CommPtr(uint8_t* p) : data_(p), type_(CommType::u8) {}
  CommPtr(TypedPtr p) : data_(p.data()), type_(comm_type_of(p.dtype())) {}
  CommPtr(void* p, CommType t) : data_(p), type_(t) {}
  void* data() const { return data_; }
  CommType type() const { return type_; }

 private:
  void* data_;
  CommType type_;
};

class ConstCommPtr {
 public:
  ConstCommPtr(const float* p) : data_(p), type_(CommType::f32) {}
  ConstCommPtr(const double* p) : data_(p), type_(CommType::f64) {}
  ConstCommPtr(const int32_t* p) : data_(p), type_(CommType::i32) {}
  ConstCommPtr(const int64_t* p) : data_(p), type_(CommType::i64) {}
  ConstCommPtr(const uint8_t* p) : data_(p), type_(CommType::u8) {}
  ConstCommPtr(ConstTypedPtr p) : data_(p.data()), type_(comm_type_of(p.dtype())) {}
  ConstCommPtr(TypedPtr p) : ConstCommPtr(ConstTypedPtr(p)) {}
  ConstCommPtr(CommPtr p) : data_(p.data()), type_(p.type()) {}
  ConstCommPtr(const void* p, CommType t) : data_(p), type_(t) {}
  const void* data() const { return data_; }
  CommType type() const { return type_; }

 private:
  const void* data_;
  CommType type_;
};

// Which operation a statistic belongs to (also used in error messages).
enum class CommOpKind : int {
  all_reduce = 0, reduce_scatter, all_gather, broadcast, all_to_all, all_to_allv, send, recv,
  barrier, count
};
constexpr int kCommOpKinds = int(CommOpKind::count);
const char* comm_op_name(CommOpKind k);

// Per-Comm counters. bytes = the payload this rank contributes to the operation (its input
// buffer): n·sizeof(T) for all_reduce, n_total·sizeof(T) for reduce_scatter, its own chunk for
// all_gather, n on the root of a broadcast (0 elsewhere), everything it sends in all_to_all(v)
// and send, 0 for recv and barrier. Tests compare these with the closed forms of each
// parallelism (e.g. ZeRO moves 2Ψ elements per step).
struct CommStats {
  std::array<uint64_t, kCommOpKinds> bytes{};
  std::array<uint64_t, kCommOpKinds> calls{};
  // What this rank's messages carried to ranks on another node (nodes.h), over all operations
  // but MPI's own broadcast and barrier: the bytes the network between nodes must move.
  uint64_t cross_node_bytes = 0;
  uint64_t cross_node_messages = 0;
  uint64_t bytes_of(CommOpKind k) const { return bytes[size_t(k)]; }
  uint64_t calls_of(CommOpKind k) const { return calls[size_t(k)]; }
  uint64_t total_bytes() const;
};

// Rare knobs of one Comm (principle 4, docs/principles.md); set with Comm::set_options.
struct CommOptions {
  // Watchdog: a wait() that takes longer than this ends the whole job through abort_job with
  // the operation named, instead of hanging forever when a peer died without MPI noticing.
  // 0 = wait forever (the default: a legitimately slow step must not be killed by surprise).
  double timeout_s = 0;
  // all_reduce of a group with ranks on several nodes, equally many (>= 2) on each: from this
  // many bytes on it reduces inside each node first, so only 1/(ranks per node) of the buffer
  // per rank crosses the link (hierarchical.cpp). Groups on one node never do. SIZE_MAX: always
  // the flat pairwise algorithm. 1 MiB: on an idle machine node first won from 1 MiB at every
  // rate measured, and training dp 4 across two nodes with it from 1 MiB instead of 16 ran 1.29x
  // (DDP) and 1.43x (ZeRO-3) as fast over 1 Gbit/s, as fast at 10 (bench/RESULTS.md).
  size_t hierarchical_min_bytes = size_t(1) << 20;
  // The same for reduce_scatter and all_gather, by the whole buffer's bytes (reduce_scatter's
  // input, all_gather's output): node first from this size on (hierarchical_reduce_scatter.cpp,
  // hierarchical_all_gather.cpp), so 1/(ranks per node) of the flat bytes cross the link.
  // 16-bit floats reduce-scatter flat (one rounding); their all-gather (copies) may go node first.
  size_t hierarchical_reduce_scatter_min_bytes = size_t(1) << 20;
  size_t hierarchical_all_gather_min_bytes = size_t(1) << 20;
};

// The blocks a node-first all_reduce, reduce_scatter or all_gather of `bytes` is cut into
// (hierarchical*.cpp): about 4 MiB each; their stages overlap, one block crossing the link while
// another moves inside the node. The planner costs the same pipeline (plan/node_first.h).
int node_first_block_count(CommOpKind op, size_t bytes);

// Rank `index` of `parts` owns elements [offset, offset + count) of an n-element buffer:
// contiguous, near-equal, the first n % parts ranks one element longer. reduce_scatter leaves
// rank r with chunk r, all_gather assembles chunk r from rank r, so the two are inverses.
struct ChunkRange {
  size_t offset = 0;
  size_t count = 0;
};
ChunkRange chunk_range(size_t n_total, int parts, int index);

}  // namespace ff
