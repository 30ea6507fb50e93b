#pragma once
// Process-level entry points of the communication layer.
//
//   int main(int argc, char** argv) {
//     ff::CommSession session(&argc, &argv);   // init_comm ... finalize_comm
//     ff::Comm& world = ff::comm_world();
//
// Launched by mpirun, the world has one rank per process. Launched plainly (./fivefold), Open
// MPI's singleton mode gives a world of size 1, so the same code runs serially; init costs
// ~20 ms there (see Engine::start).
#include <stdexcept>
#include <string>

namespace ff {

class Comm;

// Initialises MPI (MPI_THREAD_SERIALIZED) and starts the comm thread. Call once, from main's
// thread, before any other thread uses the comm layer. Idempotent.
void init_comm(int* argc, char*** argv);
// Finishes outstanding operations, stops the comm thread and finalises MPI. Call from the
// thread that called init_comm. Comms still alive afterwards must not be used.
void finalize_comm();
// True between init_comm and finalize_comm: code shared by MPI and MPI-free programs (tests of
// serial pieces) asks this instead of assuming a world exists.
bool comm_available();
// The group of all ranks; throws with the fix if init_comm was not called.
Comm& comm_world();

// Seconds this process's threads have spent blocked waiting for communication (CommRequest::wait
// and every blocking collective, on operations not yet complete) since init_comm: the exposed
// communication. A caller measures a span of its own by the difference. 0 without init_comm.
double comm_wait_seconds();

// RAII for main(): finalize_comm runs on every return path.
class CommSession {
 public:
  CommSession(int* argc, char*** argv) { init_comm(argc, argv); }
  ~CommSession() { finalize_comm(); }
  CommSession(const CommSession&) = delete;
  CommSession& operator=(const CommSession&) = delete;
};

// Ends the whole job: prints "rank R: <message>" to stderr and calls MPI_Abort, after which
// mpirun terminates every rank and exits non-zero. Use it for errors after which the ranks can
// no longer agree (one rank failing alone would leave the others hanging in a collective).
// A rank that dies by a signal (SIGKILL, SIGSEGV) also ends the job: mpirun notices the exit
// and kills the rest (tests/comm/check_failure.sh). Without MPI it prints and exits(1).
[[noreturn]] void abort_job(const std::string& message);

// An error every rank throws at the same point, after a decision the ranks share (a gradient norm
// reduced over all of them): no rank is left waiting in a collective, so main ends the job with a
// normal exit (the message printed once, by rank 0) instead of abort_job.
struct AgreedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ff
