// Operations made of other operations: stages run one after another, and parts run side by side
// with at most a window of them in flight. The node-first collectives (hierarchical*.cpp) are
// built from these around the pairwise and exchange operations.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/op.h"

namespace ff::detail {
namespace {

// Runs its stages one after another: the next starts once the previous has finished.
class StagedOp final : public Op {
 public:
  StagedOp(std::shared_ptr<CommState> comm, CommOpKind kind, std::vector<std::shared_ptr<Op>> stages,
           std::string what)
      : Op(std::move(comm), kind), stages_(std::move(stages)), what_(std::move(what)) {}

  void start() override {
    stages_[0]->start();
    advance();
  }
  bool progress() override {
    bool moved = stages_[current_]->progress();
    return advance() || moved;
  }
  std::string describe() const override {
    return what_ + " (stage " + std::to_string(current_ + 1) + " of " + std::to_string(stages_.size()) +
           ": " + (current_ < stages_.size() ? stages_[current_]->describe() : std::string("done")) + ")";
  }
  void release() override {
    for (size_t i = current_; i < stages_.size(); ++i) stages_[i]->release();
  }

 private:
  bool advance() {
    bool moved = false;
    while (current_ < stages_.size() && stages_[current_]->finished()) {
      stages_[current_]->release();
      if (++current_ < stages_.size()) stages_[current_]->start();
      moved = true;
    }
    finished_ = current_ == stages_.size();
    return moved;
  }

  std::vector<std::shared_ptr<Op>> stages_;
  size_t current_ = 0;
  std::string what_;
};

// Independent operations driven together, started in order with at most `window` unfinished at
// once (what bounds the scratch they hold); done when all are. Each part's scratch goes back as
// soon as it finishes.
class ConcurrentOp final : public Op {
 public:
  ConcurrentOp(std::shared_ptr<CommState> comm, CommOpKind kind, std::vector<std::shared_ptr<Op>> parts,
               size_t window, std::string what)
      : Op(std::move(comm), kind), parts_(std::move(parts)), released_(parts_.size(), 0),
        window_(std::max<size_t>(window, 1)), what_(std::move(what)) {}
  void start() override { retire(); }
  bool progress() override {
    bool moved = false;
    for (size_t i = first_; i < started_; ++i)
      if (!released_[i] && !parts_[i]->finished() && parts_[i]->progress()) moved = true;
    return retire() || moved;
  }
  std::string describe() const override {
    return what_ + " (" + std::to_string(done_) + " of " + std::to_string(parts_.size()) + " blocks done)";
  }
  void release() override {
    for (size_t i = first_; i < started_; ++i)
      if (!released_[i]) parts_[i]->release(), released_[i] = 1;
  }

 private:
  // Releases finished parts and starts the next ones the window allows; true if any did either.
  bool retire() {
    bool moved = false;
    for (;;) {
      for (size_t i = first_; i < started_; ++i)
        if (!released_[i] && parts_[i]->finished()) parts_[i]->release(), released_[i] = 1, ++done_, moved = true;
      while (first_ < started_ && released_[first_]) ++first_;
      if (started_ == parts_.size() || started_ - done_ >= window_) break;
      parts_[started_++]->start();  // may finish at once: the loop retires it
      moved = true;
    }
    finished_ = done_ == parts_.size();
    return moved;
  }
  std::vector<std::shared_ptr<Op>> parts_;
  std::vector<uint8_t> released_;
  size_t window_;
  size_t started_ = 0, done_ = 0;
  size_t first_ = 0;  // parts before it are all released
  std::string what_;
};

// Work on this rank's memory alone (a reduction of received data, a copy): done when started.
class LocalOp final : public Op {
 public:
  LocalOp(std::shared_ptr<CommState> comm, CommOpKind kind, std::function<void()> work, std::string what)
      : Op(std::move(comm), kind), work_(std::move(work)), what_(std::move(what)) {}
  void start() override {
    work_();
    finished_ = true;
  }
  bool progress() override { return false; }
  std::string describe() const override { return what_; }

 private:
  std::function<void()> work_;
  std::string what_;
};

}  // namespace

std::shared_ptr<Op> make_staged(std::shared_ptr<CommState> comm, CommOpKind kind,
                                std::vector<std::shared_ptr<Op>> stages, std::string what) {
  return std::make_shared<StagedOp>(std::move(comm), kind, std::move(stages), std::move(what));
}

std::shared_ptr<Op> make_concurrent(std::shared_ptr<CommState> comm, CommOpKind kind,
                                    std::vector<std::shared_ptr<Op>> parts, size_t window, std::string what) {
  return std::make_shared<ConcurrentOp>(std::move(comm), kind, std::move(parts), window, std::move(what));
}

std::shared_ptr<Op> make_local(std::shared_ptr<CommState> comm, CommOpKind kind, std::function<void()> work,
                               std::string what) {
  return std::make_shared<LocalOp>(std::move(comm), kind, std::move(work), std::move(what));
}

}  // namespace ff::detail
