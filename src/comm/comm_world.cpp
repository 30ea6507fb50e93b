// The process level: start-up and shutdown, ending the job on an error (abort_job and every failed
// MPI call), and the raw communicator for benchmarks (mpi_native.h).
#include "comm/comm_world.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "comm/comm.h"
#include "comm/engine.h"
#include "comm/mpi_native.h"

namespace ff {

void init_comm(int* argc, char*** argv) { detail::Engine::instance().start(argc, argv); }

void finalize_comm() { detail::Engine::instance().stop(); }

bool comm_available() { return detail::Engine::instance().running(); }

Comm& comm_world() { return detail::Engine::instance().world(); }

double comm_wait_seconds() { return detail::Engine::instance().waited_seconds(); }

void abort_job(const std::string& message) {
  auto& engine = detail::Engine::instance();
  int rank = 0;
  if (engine.running()) {
    rank = engine.world().rank();
  } else if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK")) {
    rank = std::atoi(r);
  }
  std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  if (engine.mpi_live()) {
    // MPI_Abort should be serialized with the thread that holds the MPI token. Wait a little
    // for it; if the holder is stuck inside MPI (the usual reason to abort), call anyway: the
    // job is ending and Open MPI's abort only talks to its runtime, not to the stuck transfer.
    engine.try_token_for(200);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::_Exit(1);
}

namespace detail {
struct NativeAccess {
  static MPI_Comm handle(const Comm& c) { return c.state().comm; }
};
}  // namespace detail

void with_native_comm(const Comm& comm, const std::function<void(MPI_Comm)>& f) {
  MPI_Comm handle = detail::NativeAccess::handle(comm);
  detail::Engine::instance().with_token([&] { f(handle); });
}

}  // namespace ff

// ---- MPI failures: every error ends the job through abort_job, naming what was being done ----

namespace ff::detail {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

void fail_mpi(int rc, const char* call, const std::string& during) {
  abort_job(std::string(call) + " failed during " + during + ": " + mpi_error_string(rc) +
            " (a peer rank probably died or the ranks called collectives with different "
            "arguments or in a different order)");
}

int mpi_count(size_t n) {
  if (n > size_t(INT_MAX)) {
    abort_job("internal: a message of " + std::to_string(n) +
              " elements exceeds MPI's int count; the comm layer should have split it into "
              "segments (report this as a bug in src/comm)");
  }
  return int(n);
}

MPI_Datatype mpi_type(CommType t) {
  switch (t) {
    case CommType::f32: return MPI_FLOAT;
    case CommType::f64: return MPI_DOUBLE;
    case CommType::i32: return MPI_INT32_T;
    case CommType::i64: return MPI_INT64_T;
    case CommType::u8: return MPI_UINT8_T;
    case CommType::bf16:  // 16-bit floats travel as words; this layer reduces them itself
    case CommType::f16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

}  // namespace ff::detail
