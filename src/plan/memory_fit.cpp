#include "plan/memory_fit.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ff {

int64_t machine_available_bytes() {
  if (const char* v = std::getenv("FIVEFOLD_MEM_AVAILABLE")) return std::atoll(v);
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  return 0;
}

namespace {
bool fits(const ModelConfig& c, const LayoutSpec& L, int64_t budget, const EngineHost& host) {
  return estimate_peak_memory(c, L, host).peak() <= budget;
}
}  // namespace

std::optional<LayoutSpec> suggest_fitting_layout(const ModelConfig& c, const LayoutSpec& L, int64_t budget,
                                                 const EngineHost& host) {
  const int max_zero = L.dp * L.cp > 1 ? 3 : 0;
  for (int z = L.zero + 1; z <= max_zero; ++z) {
    LayoutSpec s = L;
    s.zero = z;
    if (fits(c, s, budget, host)) return s;
  }
  for (Recompute r : {Recompute::selective, Recompute::full}) {
    if (int(r) <= int(L.recompute)) continue;
    LayoutSpec s = L;
    s.recompute = r, s.zero = std::max(L.zero, max_zero);
    if (fits(c, s, budget, host)) return s;
  }
  // More ranks: the model states shard over them under ZeRO-3, and the global batch is split
  // over them (fewer micro-batches per step, then smaller micro-batches) where it divides.
  for (int k = 2; k <= 1024; k *= 2) {
    LayoutSpec s = L;
    s.dp = L.dp * k, s.zero = 3, s.recompute = Recompute::full;
    if (s.grad_accum % k == 0) s.grad_accum /= k;
    else if (s.micro_batch % k == 0) s.micro_batch /= k;
    if (fits(c, s, budget, host)) return s;
  }
  return std::nullopt;
}

std::string describe_memory_budget(const RankMemory& m, int64_t available, int local_ranks) {
  return fmt::format("memory per rank (estimated): {} of {} available ({} MemAvailable / {} rank{} on this machine)",
                     m.describe(), format_bytes(available / std::max(1, local_ranks)), format_bytes(available),
                     local_ranks, local_ranks == 1 ? "" : "s");
}

std::string memory_refusal(const RankMemory& m, int64_t available, int local_ranks,
                           const std::optional<LayoutSpec>& fits, int64_t fit_bytes) {
  std::string s = fmt::format(
      "this run needs about {} per rank (pipeline rank {}: {}) but this machine has {} available for each "
      "of its {} rank{} (MemAvailable {}); ",
      format_bytes(m.peak()), m.pp_rank, m.describe(), format_bytes(available / std::max(1, local_ranks)),
      local_ranks, local_ranks == 1 ? "" : "s", format_bytes(available));
  if (!fits) return s + "no layout up to 1024x the data-parallel ranks with zero = 3 and recompute = full fits: "
                        "make the model smaller (dim, n_layers, ffn_dim, vocab) or micro_batch / seq_len shorter";
  if (fits->ranks() <= local_ranks)
    return s + fmt::format("a layout that fits: {} (about {} per rank; set those config keys)", fits->str(),
                           format_bytes(fit_bytes));
  // More ranks than this machine runs now: each must still get its budget, so on more machines.
  const int machines = (fits->ranks() + local_ranks - 1) / local_ranks;
  return s + fmt::format("a layout that fits: {} (about {} per rank; set those config keys and run {} ranks, "
                         "{} per machine like this one: {} machine{})",
                         fits->str(), format_bytes(fit_bytes), fits->ranks(), local_ranks, machines,
                         machines == 1 ? "" : "s");
}

}  // namespace ff
