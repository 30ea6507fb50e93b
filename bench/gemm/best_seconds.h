#pragma once
// The GEMM benches' timing: the best of repeated calls of f after one warm-up call (which builds
// primitives, packs, faults pages in), at least 3 calls and more until about `budget` seconds or
// `max_calls` calls.
#include <algorithm>
#include <chrono>

namespace ffbench {

template <class F>
double best_seconds(F&& f, double budget = 0.3, int max_calls = 200) {
  using clock = std::chrono::steady_clock;
  f();
  double best = 1e30, spent = 0;
  for (int call = 0; call < 3 || (spent < budget && call < max_calls); ++call) {
    const auto t0 = clock::now();
    f();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s), spent += s;
  }
  return best;
}

}  // namespace ffbench
