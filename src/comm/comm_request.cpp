#include "comm/comm_request.h"

#include "comm/engine.h"

namespace ff {

CommRequest::~CommRequest() { wait(); }

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    wait();
    op_ = std::move(other.op_);
    started_ = other.started_;
    completed_ = other.completed_;
  }
  return *this;
}

void CommRequest::wait() {
  if (!op_) return;
  detail::Engine::instance().wait(*op_);
  started_ = op_->started_us;
  completed_ = op_->completed_us;
  op_.reset();
}

bool CommRequest::test() const { return !op_ || op_->complete.load(std::memory_order_acquire); }

}  // namespace ff

namespace ff {

double CommRequest::started_us() const { return op_ ? op_->started_us : started_; }
double CommRequest::completed_us() const { return op_ ? op_->completed_us : completed_; }

}  // namespace ff
