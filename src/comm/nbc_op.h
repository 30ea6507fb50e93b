#pragma once
// Internal: operations that are plain MPI nonblocking collectives (broadcast, barrier). They
// are not on the hot path of training, so Open MPI's own algorithms serve; the engine's
// polling progresses them like everything else.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/op.h"

namespace ff::detail {

class NbcOp final : public Op {
 public:
  // `post` starts the MPI operation(s) and appends their requests.
  using Poster = std::function<void(MPI_Comm, std::vector<MPI_Request>&)>;
  NbcOp(std::shared_ptr<CommState> comm, CommOpKind kind, Poster post, std::string what)
      : Op(std::move(comm), kind), post_(std::move(post)), what_(std::move(what)) {}

  void start() override;
  bool progress() override;
  std::string describe() const override { return what_; }

 private:
  Poster post_;
  std::string what_;
  std::vector<MPI_Request> requests_;
};

}  // namespace ff::detail
