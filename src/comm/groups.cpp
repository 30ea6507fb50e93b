// Comm::split and Comm::subgroup as operations of the engine.
//
// MPI_Comm_split blocks until every rank of the parent has called it, and while one rank sits
// inside it nothing else of ours moves there: an async all-reduce that another rank must
// finish before reaching its split would deadlock. So the exchange of (color, key) is a
// nonblocking MPI_Iallgather, progressed like any other op, and only after it completes (so
// every rank of the parent has called split) does MPI_Comm_create_group build the new
// communicator; that call involves only the members of the new group, all of which are
// already past the exchange.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "comm/engine.h"
#include "comm/op.h"

namespace ff::detail {
namespace {

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

// Group creation synchronises like a barrier and has no statistics kind of its own.
SplitOp::SplitOp(std::shared_ptr<CommState> parent, int color, int key, uint64_t split_seq)
    : Op(std::move(parent), CommOpKind::barrier),
      color_(color),
      key_(key),
      tag_(kSplitTagBase + int(split_seq % kSeqWindow)) {}

SplitOp::SplitOp(std::shared_ptr<CommState> parent, std::vector<int> members, int group_key)
    : Op(std::move(parent), CommOpKind::barrier),
      tag_(kSubgroupTagBase + group_key),
      members_known_(true),
      members_(std::move(members)) {}

std::string SplitOp::describe() const {
  if (members_known_)
    return "creation of a group of " + std::to_string(members_.size()) + " out of " +
           std::to_string(comm_->size);
  return "split (color " + std::to_string(color_) + ", key " + std::to_string(key_) +
         ") of a group of " + std::to_string(comm_->size);
}

void SplitOp::start() {
  if (members_known_) return;  // progress() creates the group at once
  table_.assign(size_t(2 * comm_->size), 0);
  int mine[2] = {color_, key_};
  check_mpi(MPI_Iallgather(mine, 2, MPI_INT, table_.data(), 2, MPI_INT, comm_->comm, &request_),
            "MPI_Iallgather", [&] { return describe(); });
}

bool SplitOp::progress() {
  if (members_known_) {
    create_group();
    finished_ = true;
    return true;
  }
  int flag = 0;
  check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test", [&] { return describe(); });
  if (!flag) return false;
  create_group();
  finished_ = true;
  return true;
}

void SplitOp::create_group() {
  // Members: the parent ranks with our color, ordered by (key, parent rank) as MPI_Comm_split.
  std::vector<int> members = members_;
  if (!members_known_) {
    for (int i = 0; i < comm_->size; ++i) {
      if (table_[size_t(2 * i)] == color_) members.push_back(i);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return table_[size_t(2 * a + 1)] < table_[size_t(2 * b + 1)];
    });
  }

  auto during = [&] { return describe(); };
  MPI_Group parent_group, group, world_group;
  check_mpi(MPI_Comm_group(comm_->comm, &parent_group), "MPI_Comm_group", during);
  check_mpi(MPI_Group_incl(parent_group, int(members.size()), members.data(), &group),
            "MPI_Group_incl", during);
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_create_group(comm_->comm, group, tag_, &comm), "MPI_Comm_create_group", during);
  check_mpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", during);

  // World rank of each member, for Comm::world_ranks() (tests and the mesh check groups).
  std::vector<int> local(members.size()), world(members.size());
  std::iota(local.begin(), local.end(), 0);
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", during);
  check_mpi(MPI_Group_translate_ranks(group, int(local.size()), local.data(), world_group, world.data()),
            "MPI_Group_translate_ranks", during);
  MPI_Group_free(&world_group);
  MPI_Group_free(&group);
  MPI_Group_free(&parent_group);
  result = std::make_shared<CommState>(comm, std::move(world));
}

std::shared_ptr<CommState> run(const std::shared_ptr<SplitOp>& op) {
  Engine::instance().submit(op, true);
  Engine::instance().wait(*op);
  return op->result;
}

}  // namespace

std::shared_ptr<CommState> split_group(const std::shared_ptr<CommState>& parent, int color, int key) {
  return run(std::make_shared<SplitOp>(parent, color, key, parent->next_split++));
}

std::shared_ptr<CommState> member_group(const std::shared_ptr<CommState>& parent, std::vector<int> members,
                                        int key) {
  return run(std::make_shared<SplitOp>(parent, std::move(members), key));
}

}  // namespace ff::detail
