#pragma once
// Internal: the MPI requests of one operation, tested together with one MPI_Testsome per pass
// (one pass into Open MPI's progress engine instead of one per message), each tagged with a
// caller-chosen token that says what completed.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/mpi_check.h"

namespace ff::detail {

class RequestSet {
 public:
  void add(MPI_Request request, uint64_t token) {
    int slot;
    if (free_.empty()) {
      slot = int(reqs_.size());
      reqs_.push_back(request);
      tokens_.push_back(token);
    } else {
      slot = free_.back();
      free_.pop_back();
      reqs_[size_t(slot)] = request;
      tokens_[size_t(slot)] = token;
    }
    ++live_;
  }

  size_t live() const { return live_; }

  // Calls on_done(token, status, error) for every request that completed; error is
  // MPI_SUCCESS unless MPI reported a per-request failure (e.g. truncation). Returns how many
  // completed. `during` describes the op for a failure of MPI_Testsome itself.
  template <typename OnDone, typename Describe>
  int test_some(OnDone&& on_done, Describe&& during) {
    if (live_ == 0) return 0;
    idx_.resize(reqs_.size());
    statuses_.resize(reqs_.size());
    int count = 0;
    int rc = MPI_Testsome(int(reqs_.size()), reqs_.data(), &count, idx_.data(), statuses_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) fail_mpi(rc, "MPI_Testsome", during());
    if (count == MPI_UNDEFINED) return 0;
    for (int i = 0; i < count; ++i) {
      int slot = idx_[size_t(i)];
      const MPI_Status& st = statuses_[size_t(i)];
      int error = rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : MPI_SUCCESS;
      free_.push_back(slot);
      --live_;
      on_done(tokens_[size_t(slot)], st, error);
    }
    return count;
  }

 private:
  std::vector<MPI_Request> reqs_;  // completed slots hold MPI_REQUEST_NULL until reused
  std::vector<uint64_t> tokens_;
  std::vector<int> free_;
  std::vector<int> idx_;
  std::vector<MPI_Status> statuses_;
  size_t live_ = 0;
};

}  // namespace ff::detail
