#pragma once
// Preemption: SIGTERM and SIGINT (a scheduler's notice, Ctrl-C) ask the run to stop after the
// current step with a checkpoint; a second one ends the process at once, except while a
// checkpoint is being written, when it waits for the write to finish so that no half-written
// checkpoint is the last thing a run leaves.
//
// The handler only counts signals in a lock-free atomic (async-signal-safe); the trainer reads the
// count after each step and the ranks agree on it (a signal may reach one rank only), so every rank
// saves at the same step.
#include <csignal>

namespace ff {

// The exit status of a run stopped by SIGTERM or SIGINT after writing its checkpoint: EX_TEMPFAIL
// of sysexits.h ("try again later"), which a resume does. It is not 128 + the signal (143, 130):
// a shell reports that for a process the signal killed, and a script or `fivefold launch` must be
// able to tell a run that saved its state from one that was killed without saving.
inline constexpr int kStoppedExitCode = 75;

// "SIGTERM", "SIGINT", else "a signal".
const char* stop_signal_name(int sig);

class StopSignals {
 public:
  // Installs the handlers for SIGTERM and SIGINT (restarting interrupted system calls); the
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
  struct sigaction old_term_ {}, old_int_ {};
};

}  // namespace ff
