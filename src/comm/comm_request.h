#pragma once
// The handle of an asynchronous communication operation.
//
// Contract: the caller must not read or write the operation's buffers until wait() returns
// (or test() has returned true). Destroying a request that was not waited for waits, so a
// request going out of scope can never leave MPI writing into freed memory.
#include <memory>

namespace ff {

namespace detail {
class Op;
}

class CommRequest {
 public:
  CommRequest() = default;  // an already complete request (e.g. a collective on one rank)
  ~CommRequest();
  CommRequest(CommRequest&& other) noexcept = default;  // copies the timestamps too
  CommRequest& operator=(CommRequest&& other) noexcept;  // waits for the request it replaces
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;

  // Blocks until complete; the waiting thread then drives all in-flight communication itself
  // (no hand-off to the comm thread). Idempotent.
  void wait();
  // True once complete. A pure check: it makes no MPI call, progress comes from the comm
  // thread, so calling it in a loop is never needed for the operation to finish.
  bool test() const;
  // When the operation started and finished on the monotonic clock, in microseconds; valid once
  // complete (0 for a request that never needed communication). For timelines.
  double started_us() const;
  double completed_us() const;

 private:
  friend class Comm;
  explicit CommRequest(std::shared_ptr<detail::Op> op) : op_(std::move(op)) {}
  std::shared_ptr<detail::Op> op_;
  double started_ = 0, completed_ = 0;  // kept from the op when wait() lets it go
};

}  // namespace ff
