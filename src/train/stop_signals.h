#pragma once
// Preemption: SIGTERM, SIGINT and SIGUSR1 (a scheduler's notice, Ctrl-C, Slurm's
// `--signal=USR1@SECONDS` warning) ask the run to stop after the current step with a checkpoint.
// A second one, half a second or more after the first (closer ones are copies of the first by
// another route), ends the process at once, except while a checkpoint is being written, when it
// waits for the write to finish so that no half-written checkpoint is the last thing a run leaves.
//
// Where a handler runs matters: `fivefold train` blocks the stop signals before MPI and the comm
// engine start their threads (cli/main.cpp), this class unblocks them in the training thread only,
// and the handler runs on an alternate stack (see alt_stack_).
//
// The handler only counts signals in a lock-free atomic (async-signal-safe); the trainer reads the
// count after each step and the ranks agree on it (a signal may reach one rank only), so every rank
// saves at the same step.
#include <csignal>
#include <memory>

namespace ff {

// SIGUSR1 is the one Open MPI's mpirun forwards to its ranks and lets them finish: on SIGTERM it
// tears the job down and kills the ranks odls_base_sigkill_timeout seconds later (1 by default),
// so `fivefold launch` turns the stop it receives into SIGUSR1 for its job.
//
// The exit status of a run stopped by a stop signal after writing its checkpoint: EX_TEMPFAIL
// of sysexits.h ("try again later"), which a resume does. It is not 128 + the signal (143, 130):
// a shell reports that for a process the signal killed, and a script or `fivefold launch` must be
// able to tell a run that saved its state from one that was killed without saving.
inline constexpr int kStoppedExitCode = 75;

// SIGTERM, SIGINT and SIGUSR1.
sigset_t stop_signal_set();
// Blocks the stop signals in the calling thread, so every thread it starts from then on inherits
// them blocked; StopSignals unblocks them in the thread that trains. Call before MPI starts its.
void block_stop_signals();

// "SIGTERM", "SIGINT", "SIGUSR1", else "a signal".
const char* stop_signal_name(int sig);

class StopSignals {
 public:
  // Installs the handlers for SIGTERM, SIGINT and SIGUSR1 (restarting interrupted system calls); the
  // destructor puts the previous ones back. One at a time per process.
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Whether this process has received a stop signal since the handlers were installed.
  static bool requested();
  // The first signal received, 0 when none.
  static int first_signal();

  // While one lives, a second signal waits: it ends the process when the guard goes (the
  // checkpoint is then complete) instead of at once.
  class SaveGuard {
   public:
    SaveGuard();
    ~SaveGuard();
    SaveGuard(const SaveGuard&) = delete;
    SaveGuard& operator=(const SaveGuard&) = delete;
  };

 private:
  struct sigaction old_term_ {}, old_int_ {}, old_usr1_ {};
  // The handler runs on a stack of its own: code it interrupts may keep data below its stack
  // pointer past the 128-byte red zone (a stop signal arriving inside oneDNN's sgemm corrupted
  // the heap about one time in ten until the frame went elsewhere).
  std::unique_ptr<char[]> alt_stack_;
  stack_t old_alt_stack_ {};
};

}  // namespace ff
