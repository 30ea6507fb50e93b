#include "comm/split_op.h"

#include <algorithm>
#include <numeric>

#include "comm/mpi_check.h"

namespace ff::detail {

SplitOp::SplitOp(std::shared_ptr<CommState> parent, int color, int key, uint64_t split_seq)
    : Op(std::move(parent), CommOpKind::barrier),  // split is synchronising like a barrier; it has no stats kind of its own
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

}  // namespace ff::detail
