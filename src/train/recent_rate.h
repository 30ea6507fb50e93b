#pragma once
// A throughput over the last few steps: their tokens over their seconds, a time-weighted mean in
// which a slow step counts for all of its duration. One step's tokens/s jumps with every hiccup
// of the machine; this is what the progress line shows.
#include <deque>
#include <utility>

namespace ff {

class RecentRate {
 public:
  explicit RecentRate(int steps) : steps_(steps) {}
  void add(double tokens, double seconds) {
    window_.emplace_back(tokens, seconds);
    if (int(window_.size()) > steps_) window_.pop_front();
  }
  bool empty() const { return window_.empty(); }
  int steps() const { return steps_; }
  // Tokens per second over the window (summed afresh: no drift from a running total).
  double per_second() const {
    double tokens = 0, seconds = 0;
    for (const auto& [t, s] : window_) tokens += t, seconds += s;
    return tokens / seconds;
  }

 private:
  int steps_;
  std::deque<std::pair<double, double>> window_;  // (tokens, seconds) of each recent step, oldest first
};

}  // namespace ff
