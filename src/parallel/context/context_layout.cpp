#include "parallel/context/context_layout.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

const EnumTable<CpBalance>& cp_balance_names() {
  static const EnumTable<CpBalance> names{{CpBalance::headtail, "headtail", "r and 2cp-1-r: equal causal work"},
                                          {CpBalance::contiguous, "contiguous"}};
  return names;
}

const EnumTable<CpComm>& cp_comm_names() {
  static const EnumTable<CpComm> names{{CpComm::ring, "ring", "K/V passed around"},
                                       {CpComm::allgather, "allgather", "K/V gathered"},
                                       {CpComm::a2a, "a2a", "heads"}};
  return names;
}

void validate_context_parallel(int cp, CpComm comm, int seq_len, int n_heads, int n_kv_heads, int tp) {
  if (cp < 1) throw std::runtime_error(fmt::format("config key 'cp' must be >= 1 (got {})", cp));
  if (cp == 1) return;
  if (seq_len % (2 * cp) != 0)
    throw std::runtime_error(fmt::format(
        "seq_len ({}) must divide by 2 x cp = {}: each sequence is cut into 2 x cp equal chunks; "
        "set seq_len to a multiple of {} (e.g. {}) or change cp",
        seq_len, 2 * cp, 2 * cp, (seq_len / (2 * cp) + 1) * 2 * cp));
  if (comm == CpComm::a2a) {
    const int h = n_heads / std::max(tp, 1), hkv = n_kv_heads / std::max(tp, 1);
    if (h % cp != 0 || hkv % cp != 0)
      throw std::runtime_error(fmt::format(
          "cp_comm = a2a spreads heads over the cp ranks, but this rank's n_heads ({}) and n_kv_heads ({}) "
          "(per tp rank, tp = {}) do not both divide by cp = {}; use cp_comm = ring or allgather, or a cp "
          "dividing both",
          h, hkv, tp, cp));
  }
}

ContextLayout::ContextLayout(int cp, int rank, int seq_len, CpBalance balance)
    : cp_(cp), rank_(rank), T_(seq_len), balance_(balance) {
  if (cp < 1 || rank < 0 || rank >= cp || seq_len % (2 * cp) != 0)
    throw std::invalid_argument(fmt::format("ContextLayout: cp {} rank {} seq_len {}", cp, rank, seq_len));
}

std::array<int, 2> ContextLayout::chunks_of(int r) const {
  if (balance_ == CpBalance::headtail) return {r, 2 * cp_ - 1 - r};
  return {2 * r, 2 * r + 1};
}

std::vector<int> ContextLayout::positions_of(int r) const {
  std::vector<int> pos;
  pos.reserve(size_t(local_len()));
  const int c = chunk_len();
  for (int chunk : chunks_of(r))
    for (int t = 0; t < c; ++t) pos.push_back(chunk * c + t);
  return pos;
}

void ContextLayout::take_rows(const int32_t* full, int B, int32_t* local) const {
  const std::vector<int> pos = positions();
  for (int b = 0; b < B; ++b)
    for (size_t t = 0; t < pos.size(); ++t) local[size_t(b) * pos.size() + t] = full[size_t(b) * T_ + pos[t]];
}

}  // namespace ff
