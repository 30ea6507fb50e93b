#pragma once
// Internal: one communication operation as a state machine. The engine calls start() once and
// then progress() repeatedly, always on the thread that holds the MPI token (the comm thread
// or a thread blocked in wait()); nothing in an Op is touched by two threads at once except the
// `complete` flag, which publishes the result.
#include <atomic>
#include <memory>
#include <string>

#include "comm/comm_state.h"

namespace ff::detail {

class Op {
 public:
  Op(std::shared_ptr<CommState> comm, CommOpKind kind) : comm_(std::move(comm)), kind_(kind) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Posts the first messages. May finish the op at once (set finished_).
  virtual void start() = 0;
  // Tests outstanding messages and posts the next ones; returns true if anything moved, which
  // the engine uses to decide between polling again and backing off.
  virtual bool progress() = 0;
  // For timeouts and errors: "all_reduce of 4096 f32 (sum) on a group of 2".
  virtual std::string describe() const;
  // Scratch buffers go back to the engine's pool here (called with the token held).
  virtual void release() {}

  bool finished() const { return finished_; }
  const std::shared_ptr<CommState>& comm() const { return comm_; }
  CommOpKind kind() const { return kind_; }

  // Set (release) by the driver after finished(); read (acquire) by wait() and test().
  std::atomic<bool> complete{false};
  // When the driver started and retired the op, in microseconds of the monotonic clock (the
  // clock traces use), so a timeline can show when the transfer really ran. Written before
  // `complete` is released, read after it is acquired.
  double started_us = 0, completed_us = 0;

 protected:
  std::shared_ptr<CommState> comm_;
  CommOpKind kind_;
  bool finished_ = false;
};

}  // namespace ff::detail
