#pragma once
// Escape hatch for benchmarks that compare this layer with raw MPI on the same communicator
// (bench/comm/bench_allreduce). Including this header brings <mpi.h> with it; production code
// has no reason to, and principle 4 (docs/principles.md) keeps MPI inside src/comm.
#include <mpi.h>

#include <functional>

#include "comm/comm.h"

namespace ff {

// Runs f(the MPI communicator behind `comm`) on the calling thread while holding the engine's
// MPI token, so the raw calls are serialized with the comm thread as MPI_THREAD_SERIALIZED
// requires. Nothing of the comm layer progresses while f runs: finish all async operations
// first.
void with_native_comm(const Comm& comm, const std::function<void(MPI_Comm)>& f);

}  // namespace ff
