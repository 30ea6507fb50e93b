#include "train/stop_signals.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace ff {

namespace {

// Signal-handler state is per process by nature; lock-free atomics are the only objects a handler
// may touch.
std::atomic<int> g_signals{0};       // stop signals received
std::atomic<int> g_first_signal{0};  // the first one's number
std::atomic<int> g_saving{0};        // live SaveGuards
std::atomic<bool> g_installed{false};
std::atomic<int64_t> g_first_ns{0};  // when the first arrived (CLOCK_MONOTONIC)
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);

// One stop often arrives by several routes at once: a scheduler signals every process of the job,
// mpirun among them, and mpirun passes its copy on; a terminal's Ctrl-C reaches the whole
// foreground group. Signals this close to the first are copies of it, not a second request.
constexpr int64_t kSameStopNs = 500'000'000;

int64_t monotonic_ns() {
  timespec t {};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Ends the process now, the way the signal's default action does (a shell then reports 128 + sig),
// after one line on stderr. Only async-signal-safe calls.
[[noreturn]] void abort_now(int sig) {
  static const char msg[] =
      "fivefold: a second stop signal: ending at once without a checkpoint (the last complete one is kept)\n";
  [[maybe_unused]] const ssize_t n = ::write(2, msg, sizeof msg - 1);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  ::_exit(128 + sig);  // in case the default action was to ignore it
}

extern "C" void train_on_stop_signal(int sig) {
  const int64_t now = monotonic_ns();
  // The first stop claims the clock in one step, so its time is in place before any other handler
  // (on another thread: any thread may take a process's signal) compares with it.
  int64_t unclaimed = 0;
  if (g_first_ns.compare_exchange_strong(unclaimed, now)) {
    g_first_signal = sig;
    g_signals.fetch_add(1);  // after the number: requested() implies first_signal() is set
    return;
  }
  if (now - g_first_ns.load() < kSameStopNs) return;
  if (g_signals.fetch_add(1) >= 1 && g_saving.load() == 0) abort_now(sig);
}

}  // namespace

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, s);
  return set;
}

void block_stop_signals() {
  const sigset_t stops = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
}

const char* stop_signal_name(int sig) {
  return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "a signal";
}

StopSignals::StopSignals() {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignals: handlers already installed");
  g_signals = 0;
  g_first_signal = 0;
  g_first_ns = 0;
  constexpr size_t kAltStackBytes = 1 << 16;  // the handler needs a few hundred bytes; the kernel's frame a few KiB
  alt_stack_ = std::make_unique<char[]>(kAltStackBytes);
  stack_t alt {};
  alt.ss_sp = alt_stack_.get();
  alt.ss_size = kAltStackBytes;
  if (::sigaltstack(&alt, &old_alt_stack_) != 0) throw std::runtime_error("sigaltstack failed");
  struct sigaction sa {};
  sa.sa_handler = train_on_stop_signal;
  sa.sa_mask = stop_signal_set();  // no handler interrupts another
  sa.sa_flags = SA_RESTART | SA_ONSTACK;  // an interrupted read or write resumes instead of failing with EINTR
  ::sigaction(SIGTERM, &sa, &old_term_);
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGUSR1, &sa, &old_usr1_);
  const sigset_t stops = stop_signal_set();
  pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  ::sigaltstack(&old_alt_stack_, nullptr);
  g_installed = false;
}

bool StopSignals::requested() { return g_signals.load() > 0; }
int StopSignals::first_signal() { return g_first_signal.load(); }

StopSignals::SaveGuard::SaveGuard() { g_saving.fetch_add(1); }

StopSignals::SaveGuard::~SaveGuard() {
  // A second signal that arrived during the save has waited for it: honour it now.
  if (g_saving.fetch_sub(1) == 1 && g_signals.load() >= 2) abort_now(g_first_signal.load());
}

}  // namespace ff
