#pragma once
// Internal: a fixed set of sends and receives posted at once and finished together: send,
// recv, all_to_all and all_to_allv. Buffers larger than MPI's int count are cut into
// kMaxMessageBytes messages; both sides cut the same way, so the pieces match in order
// (MPI never reorders messages between one pair of ranks with the same tag).
#include <memory>
#include <string>
#include <vector>

#include "comm/op.h"
#include "comm/request_set.h"

namespace ff::detail {

class ExchangeOp final : public Op {
 public:
  struct Transfer {
    int peer;
    std::byte* data;  // read for sends, written for receives
    size_t count;     // elements
  };

  ExchangeOp(std::shared_ptr<CommState> comm, CommOpKind kind, CommType type, int tag,
             std::vector<Transfer> sends, std::vector<Transfer> recvs, std::string what);

  void start() override;
  bool progress() override;
  std::string describe() const override { return what_; }

  static constexpr size_t kMaxMessageBytes = size_t(1) << 30;

 private:
  void on_done(uint64_t token, const MPI_Status& status, int error);

  CommType type_;
  MPI_Datatype dtype_;
  size_t es_;
  int tag_;
  std::vector<Transfer> sends_, recvs_;
  std::vector<size_t> expected_;  // element count of each posted receive piece
  std::string what_;
  RequestSet requests_;
};

}  // namespace ff::detail
