#include "comm/nbc_op.h"

#include "comm/mpi_check.h"

namespace ff::detail {

void NbcOp::start() {
  post_(comm_->comm, requests_);
  finished_ = requests_.empty();
}

bool NbcOp::progress() {
  int flag = 0;
  check_mpi(MPI_Testall(int(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE),
            "MPI_Testall", [&] { return what_; });
  finished_ = flag != 0;
  return finished_;
}

}  // namespace ff::detail
