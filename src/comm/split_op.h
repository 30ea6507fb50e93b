#pragma once
// Internal: Comm::split as an operation of the engine.
//
// MPI_Comm_split blocks until every rank of the parent has called it, and while one rank sits
// inside it nothing else of ours moves there: an async all-reduce that another rank must
// finish before reaching its split would deadlock. So the exchange of (color, key) is a
// nonblocking MPI_Iallgather, progressed like any other op, and only after it completes (so
// every rank of the parent has called split) does MPI_Comm_create_group build the new
// communicator; that call involves only the members of the new group, all of which are
// already past the exchange.
#include <memory>
#include <vector>

#include "comm/op.h"

namespace ff::detail {

class SplitOp final : public Op {
 public:
  SplitOp(std::shared_ptr<CommState> parent, int color, int key, uint64_t split_seq);
  // Comm::subgroup: the members (parent ranks, in group order) are known to every member, so
  // there is nothing to exchange; only they take part.
  SplitOp(std::shared_ptr<CommState> parent, std::vector<int> members, int group_key);

  void start() override;
  bool progress() override;
  std::string describe() const override;

  // Valid after completion: the new group's state.
  std::shared_ptr<CommState> result;

 private:
  void create_group();

  int color_ = 0, key_ = 0;
  int tag_;
  bool members_known_ = false;
  std::vector<int> members_;
  std::vector<int> table_;  // (color, key) of every parent rank
  MPI_Request request_ = MPI_REQUEST_NULL;
};

}  // namespace ff::detail
