#pragma once
// Value types of the communication layer: element types, reduction ops, options, statistics
// and the chunking rule shared by reduce_scatter and all_gather. No MPI here, so every layer
// (and the MPI-free unit tests) can include it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ff {

enum class CommType { f32, f64, i32, i64, u8 };
enum class ReduceOp { sum, max, min };

size_t comm_type_size(CommType t);
const char* comm_type_name(CommType t);
const char* reduce_op_name(ReduceOp op);

// The element types the templated wrappers accept; anything else fails at compile time with
// this message instead of a page of template errors.
template <typename T>
constexpr CommType comm_type_of() {
  if constexpr (std::is_same_v<T, float>) return CommType::f32;
  else if constexpr (std::is_same_v<T, double>) return CommType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return CommType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return CommType::i64;
  else if constexpr (std::is_same_v<T, uint8_t>) return CommType::u8;
  else static_assert(!sizeof(T), "Comm supports float, double, int32_t, int64_t and uint8_t");
}

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
  uint64_t bytes_of(CommOpKind k) const { return bytes[size_t(k)]; }
  uint64_t calls_of(CommOpKind k) const { return calls[size_t(k)]; }
  uint64_t total_bytes() const;
};

// Rare knobs of one Comm (DESIGN principle 4); set with Comm::set_options.
struct CommOptions {
  // Watchdog: a wait() that takes longer than this ends the whole job through abort_job with
  // the operation named, instead of hanging forever when a peer died without MPI noticing.
  // 0 = wait forever (the default: a legitimately slow step must not be killed by surprise).
  double timeout_s = 0;
};

// Rank `index` of `parts` owns elements [offset, offset + count) of an n-element buffer:
// contiguous, near-equal, the first n % parts ranks one element longer. reduce_scatter leaves
// rank r with chunk r, all_gather assembles chunk r from rank r, so the two are inverses.
struct ChunkRange {
  size_t offset = 0;
  size_t count = 0;
};
ChunkRange chunk_range(size_t n_total, int parts, int index);

}  // namespace ff
