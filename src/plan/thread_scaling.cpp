#include "plan/thread_scaling.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

namespace {
struct KindKey {
  WorkKind kind;
  const char* key;
};
constexpr KindKey kKinds[] = {{WorkKind::gemm, "thread_gemm"},
                              {WorkKind::attention, "thread_attention"},
                              {WorkKind::elementwise, "thread_elementwise"},
                              {WorkKind::optimizer, "thread_optimizer"}};
}  // namespace

const RateCurve& ThreadScaling::curve(WorkKind k) const {
  switch (k) {
    case WorkKind::gemm: return gemm;
    case WorkKind::attention: return attention;
    case WorkKind::elementwise: return elementwise;
    case WorkKind::optimizer: return optimizer;
  }
  return gemm;
}

double ThreadScaling::effective_threads(WorkKind k, int threads) const {
  const RateCurve& c = curve(k);
  const double t = std::max(1, threads);
  if (c.empty()) return t;
  return t * c.at(t) / c.at(std::max(1, rates_threads));
}

bool is_thread_scaling_key(const std::string& key) {
  return key == "threads" || std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindKey& k) { return key == k.key; });
}

ThreadScaling read_thread_scaling(const toml::table& rates, const std::string& path) {
  ThreadScaling s;
  const int64_t threads = rates["threads"].value_or(int64_t(0));
  if (threads < 0 || threads > 1 << 16)
    throw std::runtime_error(fmt::format("cluster file '{}': [rates] threads is the threads per rank the rates were "
                                         "measured with, 1 or more (got {})",
                                         path, threads));
  s.rates_threads = int(threads);
  for (const KindKey& k : kKinds) s.curve(k.kind) = read_rate_curve(rates.get(k.key), path, k.key);
  const bool any = std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindKey& k) { return !s.curve(k.kind).empty(); });
  if (any && !s.known())
    throw std::runtime_error(fmt::format("cluster file '{}': [rates] has some of thread_gemm, thread_attention, "
                                         "thread_elementwise, thread_optimizer but not all; write them together with "
                                         "`fivefold calibrate` or remove them",
                                         path));
  return s;
}

std::string thread_scaling_toml(const ThreadScaling& s) {
  std::string t = s.rates_threads > 0 ? fmt::format("threads = {}  # per rank, while the rates above were measured\n", s.rates_threads) : "";
  if (!s.known()) return t;
  t += "# [threads, efficiency]: the node's throughput with groups of that many threads in one rank over its "
       "throughput with one-thread ranks, every core busy\n";
  for (const KindKey& k : kKinds) t += rate_curve_toml(k.key, s.curve(k.kind));
  return t;
}

}  // namespace ff
