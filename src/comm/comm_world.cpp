#include "comm/comm_world.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "comm/comm.h"
#include "comm/engine.h"

namespace ff {

void init_comm(int* argc, char*** argv) { detail::Engine::instance().start(argc, argv); }

void finalize_comm() { detail::Engine::instance().stop(); }

bool comm_available() { return detail::Engine::instance().running(); }

Comm& comm_world() { return detail::Engine::instance().world(); }

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

}  // namespace ff
