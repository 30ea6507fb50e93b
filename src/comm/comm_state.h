#pragma once
// Internal: what a Comm handle points to. Ops keep a shared_ptr to it, so the MPI communicator
// outlives every operation started on it even if the Comm object is destroyed first.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/comm_types.h"

namespace ff::detail {

// Tag layout on every communicator. Collective traffic and split bookkeeping live above the
// user's point-to-point tags, so a user recv can never match a collective's message.
constexpr int kUserTagLimit = 1 << 29;                       // user tags: [0, 2^29)
constexpr int kCollTagBase = kUserTagLimit;                   // collectives: 2 phases x seq window
constexpr uint64_t kSeqWindow = uint64_t(1) << 20;
constexpr int kSplitTagBase = kCollTagBase + int(2 * kSeqWindow);
constexpr int kSubgroupTagBase = kSplitTagBase + int(kSeqWindow);  // + the caller's group key
constexpr int kSubgroupKeys = 1 << 10;
constexpr int kTagsNeeded = kSubgroupTagBase + kSubgroupKeys;  // checked against MPI_TAG_UB

struct CommState {
  CommState(MPI_Comm comm, std::vector<int> world_ranks);
  ~CommState();  // frees the MPI communicator (through the engine's MPI token)
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::vector<int> world_ranks;  // world rank of each rank of this group

  // Every rank issues the collectives of one communicator in the same order (MPI's rule), so
  // this counter agrees across ranks and gives each collective its own tag: messages of two
  // collectives in flight at once can then never be confused. Touched by the caller thread.
  uint64_t next_seq = 0;
  uint64_t next_split = 0;

  CommOptions options;
  CommStats stats;
};

// Tag of phase `phase` (0 or 1) of the collective with sequence number `seq`.
inline int coll_tag(uint64_t seq, int phase) {
  return kCollTagBase + int((seq % kSeqWindow) * 2) + phase;
}

}  // namespace ff::detail
