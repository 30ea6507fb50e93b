#pragma once
// Which tokens of each sequence a context-parallel rank holds. A sequence of T tokens is cut into
// 2·cp chunks of T/(2·cp). Under the causal mask chunk c costs work proportional to c + 1/2 (it
// attends to every earlier token), so contiguous halves would give the last rank nearly
// (2cp - 1)/1 times the first's work; `headtail` gives rank r chunks r and 2cp-1-r, whose costs
// add to the same 2cp for every rank (Megatron's and Llama 3's load balance). `contiguous` (chunks
// 2r and 2r+1) is offered to measure that imbalance.
//
// A rank's local sequence is its two chunks back to back (T/cp rows), so the model runs on
// (B, T/cp) micro-batches unchanged; RoPE uses each row's global position (positions()).
#include <array>
#include <cstdint>
#include <vector>

#include "core/enum_table.h"

namespace ff {

enum class CpBalance { headtail, contiguous };
enum class CpComm { ring, allgather, a2a };
// The config keys cp_balance and cp_comm (and the planner's layout key cp_comm).
const EnumTable<CpBalance>& cp_balance_names();
const EnumTable<CpComm>& cp_comm_names();

// Bad input before any work: cp >= 1, seq_len divisible by 2·cp, all-to-all with the (per tensor
// rank) query and key/value heads divisible by cp. Errors name the keys and the fix.
void validate_context_parallel(int cp, CpComm cp_comm, int seq_len, int n_heads, int n_kv_heads, int tp);

class ContextLayout {
 public:
  ContextLayout(int cp, int rank, int seq_len, CpBalance balance);
  int cp() const { return cp_; }
  int rank() const { return rank_; }
  int seq_len() const { return T_; }
  int chunk_len() const { return T_ / (2 * cp_); }
  int local_len() const { return T_ / cp_; }  // the two chunks
  // The global chunk indices rank r holds, in local order.
  std::array<int, 2> chunks_of(int r) const;
  // Global position of each local row of rank r (local_len() entries).
  std::vector<int> positions_of(int r) const;
  std::vector<int> positions() const { return positions_of(rank_); }
  // This rank's rows of B whole sequences: full (B, T) -> local (B, T/cp).
  void take_rows(const int32_t* full, int B, int32_t* local) const;

 private:
  int cp_, rank_, T_;
  CpBalance balance_;
};

}  // namespace ff
