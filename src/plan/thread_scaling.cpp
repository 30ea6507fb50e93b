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
constexpr const char* kTwiceSuffix = "_twice";
}  // namespace

const RateCurve& ThreadScaling::curve(WorkKind k, bool twice) const {
  switch (k) {
    case WorkKind::gemm: return twice ? gemm_twice : gemm;
    case WorkKind::attention: return twice ? attention_twice : attention;
    case WorkKind::elementwise: return twice ? elementwise_twice : elementwise;
    case WorkKind::optimizer: return twice ? optimizer_twice : optimizer;
  }
  return gemm;
}

double ThreadScaling::effective_threads(WorkKind k, int threads, bool oversubscribed) const {
  const RateCurve& c = curve(k);
  const double t = std::max(1, threads);
  if (c.empty()) return t;
  const RateCurve& at = oversubscribed && twice_known() ? curve(k, true) : c;
  return t * at.at(t) / c.at(std::max(1, rates_threads));
}

bool is_thread_scaling_key(const std::string& key) {
  return key == "threads" || std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindKey& k) {
           return key == k.key || key == std::string(k.key) + kTwiceSuffix;
         });
}

ThreadScaling read_thread_scaling(const toml::table& rates, const std::string& path) {
  ThreadScaling s;
  const int64_t threads = rates["threads"].value_or(int64_t(0));
  if (threads < 0 || threads > 1 << 16)
    throw std::runtime_error(fmt::format("cluster file '{}': [rates] threads is the threads per rank the rates were "
                                         "measured with, 1 or more (got {})",
                                         path, threads));
  s.rates_threads = int(threads);
  for (bool twice : {false, true}) {
    const std::string suffix = twice ? kTwiceSuffix : "";
    for (const KindKey& k : kKinds) {
      const std::string key = k.key + suffix;
      s.curve(k.kind, twice) = read_rate_curve(rates.get(key), path, key.c_str());
    }
    const bool any = std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindKey& k) { return !s.curve(k.kind, twice).empty(); });
    if (any && !(twice ? s.twice_known() && s.known() : s.known()))
      throw std::runtime_error(fmt::format("cluster file '{}': [rates] has some of thread_gemm{}, thread_attention{}, "
                                           "thread_elementwise{}, thread_optimizer{} but not all{}; write them together "
                                           "with `fivefold calibrate` or remove them",
                                           path, suffix, suffix, suffix, suffix,
                                           twice ? " (or without the four curves they extend)" : ""));
  }
  return s;
}

std::string thread_scaling_toml(const ThreadScaling& s) {
  std::string t = s.rates_threads > 0 ? fmt::format("threads = {}  # per rank, while the rates above were measured\n", s.rates_threads) : "";
  if (!s.known()) return t;
  t += "# [threads, efficiency]: the node's throughput with groups of that many threads in one rank over its "
       "throughput with one-thread ranks, every core busy\n";
  for (const KindKey& k : kKinds) t += rate_curve_toml(k.key, s.curve(k.kind));
  if (!s.twice_known()) return t;
  t += "# the same with the cores filled twice over (2 x cores threads in groups of that many): 1 where "
       "time-sharing costs nothing more\n";
  for (const KindKey& k : kKinds) t += rate_curve_toml((std::string(k.key) + kTwiceSuffix).c_str(), s.curve(k.kind, true));
  return t;
}

}  // namespace ff
