#pragma once
// Internal: the process-wide communication engine.
//
// MPI is initialised with MPI_THREAD_SERIALIZED and every MPI call after that is made by
// whichever thread holds the engine's MPI token (one mutex):
//   - the comm thread, while operations are in flight and nobody waits for them. This is what
//     makes an async all-reduce progress while the caller computes: Open MPI moves a message
//     only inside an MPI call, so without this thread nothing would move until wait().
//   - a caller blocked in wait(). It drives all in-flight operations itself and the comm thread
//     stands aside, so a blocking collective costs no thread hand-off. (A variant in which the
//     comm thread made every call and the waiter only watched a flag reached 0.51x raw MPI's
//     bus bandwidth at 256 KiB and 0.7-0.8x at 1-2 MiB: wake-ups and cross-thread hand-offs.)
// Neither busy-spins for long: see Backoff. With nothing in flight the comm thread sleeps on
// a condition variable and costs nothing.
//
// Operations start in the order they were submitted (MPI requires each communicator's
// collectives in the same order on every rank, and the caller's program order provides it)
// and are progressed concurrently.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/op.h"

namespace ff {
class Comm;
}

namespace ff::detail {

// How long a thread blocked in wait() keeps polling after the last completed message before it
// starts sleeping. It must cover a peer that is still busy with the previous phase of the same
// collective (copying and reducing a few MiB takes ~1 ms here): with 200 us, 8-16 MiB
// all-reduces fell to 0.7-0.8x raw MPI because ranks dozed off mid-operation. Past 2 ms of
// silence the peer is late, not busy, and sleeping costs nothing. (The planner charges ranks
// sharing cores for this polling: plan/engine_step_time.cpp.)
inline constexpr std::chrono::microseconds kWaiterSpinWindow{2000};

// How a thread waits for messages without burning a core.
//
// Right after something moved, more is usually about to move (the next segment of the same
// transfer, or the peer finishing the previous phase), so a waiting thread keeps polling for
// `spin_window`, handing the core to any other runnable thread now and then (a compute thread,
// an oversubscribed rank). Once nothing has moved for that long a peer is late (a pipeline
// bubble, a slower rank), and the thread sleeps instead: 20 us first, doubling up to 1 ms, so a
// rank that waits for seconds costs ~2% of a core while still noticing completion within ~1 ms.
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

// Reusable receive buffers and accumulators for reductions. Allocating a fresh 1 MiB buffer per
// collective would mmap/munmap and page-fault on every call (tens of microseconds, as much as
// a whole small all-reduce), so buffers are kept and handed out again. Used only by the thread
// holding the MPI token, hence no lock.
class ScratchPool {
 public:
  std::byte* take(size_t bytes);
  void give(std::byte* buffer);
  void clear();
  size_t bytes_held() const;

 private:
  struct Buffer {
    size_t bytes;
    std::unique_ptr<std::byte[]> data;
  };
  std::vector<Buffer> free_;
  std::vector<Buffer> lent_;
};

class Engine {
 public:
  static Engine& instance();
  ~Engine();

  void start(int* argc, char*** argv);  // MPI_Init_thread + the comm thread; idempotent
  void stop();                          // drains, joins the thread, MPI_Finalize
  bool running() const { return running_.load(std::memory_order_acquire); }
  // True between MPI_Init and MPI_Finalize (abort_job needs it even if start() failed later).
  bool mpi_live() const;

  Comm& world();

  // caller_waits: the submitter is about to wait() (a blocking call), so it will start the op
  // itself and the comm thread is not woken for nothing.
  void submit(std::shared_ptr<Op> op, bool caller_waits);
  void wait(Op& op);
  // Seconds threads have spent blocked in wait() on operations not yet complete: the
  // communication the caller could not hide behind its own work.
  double waited_seconds() const { return waited_ns_.load(std::memory_order_relaxed) * 1e-9; }

  // Runs f with the MPI token held (recursively safe for the holder). For split's blocking
  // MPI_Comm_create_group, freeing communicators, and the benchmark's raw-MPI baseline.
  template <typename F>
  void with_token(F&& f) {
    if (holds_token()) {
      f();
      return;
    }
    take_token();
    struct Give {
      Engine* e;
      ~Give() { e->give_token(); }
    } give{this};  // also when f throws
    f();
  }
  bool holds_token() const {
    return token_owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // abort_job: take the token if it comes free soon, so MPI_Abort is serialized with the comm
  // thread; give up after `ms` because the holder may be stuck inside MPI for good.
  bool try_token_for(int ms);

  ScratchPool& scratch() { return scratch_; }  // token required
  const std::vector<int>& rank_nodes() const { return nodes_.rank_nodes; }  // node of each world rank
  const std::vector<std::string>& node_names() const { return nodes_.names; }

 private:
  Engine() = default;
  bool round();  // token required: admit queued ops, progress all, retire finished ones
  void thread_main();
  void drain();

  std::mutex token_;                         // the MPI token
  // Which thread holds the token. This was a thread_local bool, written by with_token from
  // CommState::~CommState; UBSan reported "store to null pointer of type 'bool'" there at the exit
  // of `train`: communicators are freed from destructors that may run during exit or a thread's
  // teardown, when a thread_local's storage is no longer guaranteed to be there (the TLS wrapper of
  // a variable defined in another translation unit is what the sanitizer saw return null). An
  // atomic owner id in the engine, which lives until after the last Comm, has no such window.
  // Relaxed is enough: a thread only ever finds its own id there if it stored it.
  std::atomic<std::thread::id> token_owner_{};
  void take_token() {
    token_.lock();
    token_owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_take_token() {
    if (!token_.try_lock()) return false;
    token_owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void give_token() {
    token_owner_.store(std::thread::id(), std::memory_order_relaxed);
    token_.unlock();
  }

  std::mutex mu_;                            // guards queue_, stop_, and the cv predicates
  std::condition_variable wake_;             // the comm thread sleeps here
  std::deque<std::shared_ptr<Op>> queue_;    // submitted, not yet started
  bool stop_ = false;
  std::atomic<int> waiters_{0};              // threads inside wait() driving progress
  std::atomic<size_t> active_count_{0};      // mirror of active_.size() for the cv predicate
  std::atomic<uint64_t> waited_ns_{0};       // summed over every wait() that blocked

  std::vector<std::shared_ptr<Op>> active_;  // started, not finished (token required)
  ScratchPool scratch_;

  std::thread thread_;
  std::atomic<bool> running_{false};
  bool mpi_started_here_ = false;
  std::unique_ptr<Comm> world_;
  NodeMap nodes_;
};

}  // namespace ff::detail
