#pragma once
// Internal: how a thread waits for messages without burning a core.
//
// Right after something moved, more is usually about to move (the next segment of the same
// transfer, or the peer finishing the previous phase), so a waiting thread keeps polling for
// `spin_window`, handing the core to any other runnable thread now and then (a compute thread,
// an oversubscribed rank). Once nothing has moved for that long a peer is late (a pipeline
// bubble, a slower rank), and the thread sleeps instead: 20 us first, doubling up to 1 ms, so a
// rank that waits for seconds costs ~2% of a core while still noticing completion within ~1 ms.
#include <algorithm>
#include <chrono>

namespace ff::detail {

class Backoff {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kMinSleep{20};
  static constexpr std::chrono::microseconds kMaxSleep{1000};

  explicit Backoff(std::chrono::microseconds spin_window) : spin_window_(spin_window) {}

  void progressed() {
    last_progress_ = clock::now();
    sleep_ = kMinSleep;
  }

  // Zero while inside the spin window (the caller yields and polls again), otherwise the next
  // sleep duration.
  std::chrono::microseconds next_sleep() {
    if (clock::now() - last_progress_ < spin_window_) return std::chrono::microseconds{0};
    auto s = sleep_;
    sleep_ = std::min(sleep_ * 2, kMaxSleep);
    return s;
  }

 private:
  std::chrono::microseconds spin_window_;
  clock::time_point last_progress_ = clock::now();
  std::chrono::microseconds sleep_ = kMinSleep;
};

}  // namespace ff::detail
