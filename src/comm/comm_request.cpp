#include "comm/comm_request.h"

#include "comm/engine.h"

namespace ff {

CommRequest::~CommRequest() { wait(); }

CommRequest& CommRequest::operator=(CommRequest&& other) noexcept {
  if (this != &other) {
    wait();
    op_ = std::move(other.op_);
  }
  return *this;
}

void CommRequest::wait() {
  if (!op_) return;
  detail::Engine::instance().wait(*op_);
  op_.reset();
}

bool CommRequest::test() const { return !op_ || op_->complete.load(std::memory_order_acquire); }

}  // namespace ff
