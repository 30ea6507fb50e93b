#include "comm/comm_state.h"

#include "comm/engine.h"
#include "comm/mpi_check.h"

namespace ff::detail {

// Runs with the MPI token held (engine start, or a split on the driving thread).
CommState::CommState(MPI_Comm c, std::vector<int> members) : comm(c), world_ranks(std::move(members)) {
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", [] { return std::string("creating a Comm"); });
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", [] { return std::string("creating a Comm"); });
}

CommState::~CommState() {
  // After finalize_comm MPI has reclaimed every communicator; freeing again would be an error.
  Engine& engine = Engine::instance();
  if (comm == MPI_COMM_NULL || !engine.running()) return;
  engine.with_token([&] { MPI_Comm_free(&comm); });
}

}  // namespace ff::detail
