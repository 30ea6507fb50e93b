#pragma once
// How one rank's work speeds up with its OpenMP threads, against ranks of one thread sharing the
// node's cores: what decides ranks x threads. `fivefold calibrate` measures it with every core
// busy (cores / T groups of T threads, each running the same kernels at once), so the efficiency
// at T threads is the node's throughput with T-thread groups over its throughput with one-thread
// groups. GEMMs split well over threads; the element-wise kernels and the optimizer stream memory
// and pay a barrier per call, so they scale worse, and that difference is what flips the choice.
#include <string>
#include <utility>

#include <toml++/toml.h>

#include "plan/rate_curve.h"

namespace ff {

enum class WorkKind { gemm, attention, elementwise, optimizer };

struct ThreadScaling {
  // Threads per rank the [rates] per-core figures were measured with (0: unknown, taken as one).
  int rates_threads = 0;
  // [threads, efficiency]: efficiency 1 at one thread; curves empty in files written before them
  // (every kind then scales perfectly, as those files were always read).
  RateCurve gemm, attention, elementwise, optimizer;
  // The same with the node's cores filled twice over (2 x cores threads in groups of T): the node's
  // throughput over its throughput with one-thread ranks filling the cores once. Time-sharing
  // alone keeps it at 1; OpenMP teams whose threads wait for a descheduled teammate lose more, and
  // that loss is what these hold. Empty in older files: oversubscribed splits cost the
  // time-sharing alone.
  RateCurve gemm_twice, attention_twice, elementwise_twice, optimizer_twice;
  bool known() const { return !gemm.empty() && !attention.empty() && !elementwise.empty() && !optimizer.empty(); }
  bool twice_known() const {
    return !gemm_twice.empty() && !attention_twice.empty() && !elementwise_twice.empty() && !optimizer_twice.empty();
  }
  const RateCurve& curve(WorkKind k, bool twice = false) const;
  RateCurve& curve(WorkKind k, bool twice = false) { return const_cast<RateCurve&>(std::as_const(*this).curve(k, twice)); }
  // One thread's worth of the per-core rates a rank of `threads` gets: threads x its efficiency
  // over the efficiency the rates were measured at (threads itself when the curves are unknown).
  // `oversubscribed`: the node runs more threads than cores, and the planner divides the cores
  // among them (EngineRates::usable_cores); the twice-over curve then says what is left of them.
  double effective_threads(WorkKind k, int threads, bool oversubscribed = false) const;
};

// The [rates] keys that hold it: threads, thread_gemm, thread_attention, thread_elementwise,
// thread_optimizer, and the same four ending in _twice.
bool is_thread_scaling_key(const std::string& key);
ThreadScaling read_thread_scaling(const toml::table& rates, const std::string& path);
std::string thread_scaling_toml(const ThreadScaling& s);

}  // namespace ff
