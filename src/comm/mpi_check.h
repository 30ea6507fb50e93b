#pragma once
// Internal: turning MPI return codes into a job-wide failure with a readable message. Every
// communicator of this layer uses MPI_ERRORS_RETURN, so MPI hands the code back to us and the
// message can name the fivefold operation, not only the MPI call.
#include <mpi.h>

#include <string>

#include "comm/comm_types.h"

namespace ff::detail {

std::string mpi_error_string(int code);

[[noreturn]] void fail_mpi(int rc, const char* call, const std::string& during);

// Ends the job (abort_job) when rc is not MPI_SUCCESS. `during()` names what was being done;
// it is a callable so the hot path (one call per message segment) builds no string.
template <typename Describe>
inline void check_mpi(int rc, const char* call, Describe&& during) {
  if (rc != MPI_SUCCESS) [[unlikely]] fail_mpi(rc, call, during());
}

// MPI counts are int; this layer splits larger buffers itself, so a count that does not fit
// is a bug here, not a caller error.
int mpi_count(size_t n);

MPI_Datatype mpi_type(CommType t);

}  // namespace ff::detail
