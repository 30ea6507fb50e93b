// fivefold launch: the supervisor. Runs `mpirun ... fivefold train ...` (or srun) and, when the job
// fails for a reason a restart can cure (a rank died, the hang watchdog ended it), runs the same
// command again: training resumes from the latest complete checkpoint of its run folder. Each
// restart is printed and logged in RUN/metrics.jsonl with its reason; after --max-restarts it gives
// up with a summary. Errors that a restart would only repeat (bad config, a non-finite stop) end it
// at once. SIGTERM and SIGINT are forwarded to the job, which saves and stops; launch then waits
// for it, does not restart it, and exits with its status.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "io/metrics.h"

namespace ff::cli {

namespace {

// The running job's pid for the signal handler (0: none), and the stop signal launch received.
std::atomic<pid_t> g_job{0};
std::atomic<int> g_stop_signal{0};

// Forwards the signal to the job (kill is async-signal-safe); the job's own handling decides what
// a first and a second signal do (fivefold train: save and stop; abort at once).
extern "C" void forward_to_job(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  if (const pid_t job = g_job.load(); job > 0) ::kill(job, sig);
}

// SIGTERM and SIGINT go to the job while launch runs, restarting interrupted reads and waits.
void forward_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = forward_to_job;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

struct Attempt {
  int exit_code = 0;   // the launcher's
  std::string reason;  // what fivefold makes of its output, empty when it succeeded
  bool restartable = false;
};

// Runs the command with its stdout and stderr through a pipe: echoed as they come, and read for
// the signs of what went wrong (Open MPI's and Slurm's words for a dead rank, the watchdog's line).
Attempt run_once(const std::vector<std::string>& cmd) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Should launch itself die without forwarding (SIGKILL), the job is told to stop rather than
    // left to run unsupervised. In its own process group, so that a Ctrl-C at the terminal reaches
    // launch, which forwards it once, and not the job a second time (an abort).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::setpgid(0, 0);
    // Outside the terminal's foreground group a read of the terminal would stop the job (SIGTTIN);
    // training reads no input.
    if (const int null_in = ::open("/dev/null", O_RDONLY); null_in >= 0) ::dup2(null_in, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& w : cmd) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "fivefold launch: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    std::_Exit(127);
  }
  g_job = pid;
  // A signal that came between fork and the line above found no job to forward to.
  if (const int sig = g_stop_signal.load()) ::kill(pid, sig);
  ::close(fds[1]);
  static const std::regex ompi_signal(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+))");
  static const std::regex slurm_task(R"(srun: error: (\S+): task (\d+): (.*))");
  static const std::regex watchdog(R"(rank (\d+): (.*past collective_timeout.*?)(: a peer rank|$))");
  static const std::regex own_error(R"(fivefold \w+: error: )");
  std::string died, hang, error, line;
  char buf[4096];
  auto scan = [&](const std::string& l) {
    std::smatch m;
    if (died.empty() && std::regex_search(l, m, ompi_signal)) {
      const int sig = std::stoi(m[4]);
      const std::string pid = m[2].str() == "0" ? "" : "pid " + m[2].str() + " ";  // Open MPI may not know it
      died = fmt::format("rank {} ({}on {}) died of signal {} ({})", m[1].str(), pid, m[3].str(), sig,
                         strsignal(sig));
    } else if (died.empty() && std::regex_search(l, m, slurm_task)) {
      died = fmt::format("rank {} on {} ended: {}", m[2].str(), m[1].str(), m[3].str());
    } else if (hang.empty() && std::regex_search(l, m, watchdog)) {
      hang = fmt::format("hang: rank {}'s watchdog: {}", m[1].str(), m[2].str());
    } else if (error.empty() && std::regex_search(l, m, own_error)) {
      error = l;
    }
  };
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::fwrite(buf, 1, size_t(n), stdout);
    std::fflush(stdout);
    line.append(buf, size_t(n));
    for (size_t nl; (nl = line.find('\n')) != std::string::npos; line.erase(0, nl + 1))
      scan(line.substr(0, nl));
  }
  if (!line.empty()) scan(line);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_job = 0;
  Attempt a;
  a.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (a.exit_code == 0) return a;
  // A dead rank or a hang is cured by a restart; an error fivefold itself reported is not (it
  // would recur), unless a rank died first and the error is the others' view of it.
  a.restartable = (!died.empty() || !hang.empty() || error.empty()) && a.exit_code != 127;
  if (a.exit_code == 127) error = "the command could not be started (exit code 127: not found?)";
  a.reason = !died.empty()    ? died
             : !hang.empty()  ? hang
             : !error.empty() ? error
                              : fmt::format("the launcher exited with code {}", a.exit_code);
  return a;
}

// The run folder: the value of --out (or --out=DIR) in the training command.
std::string run_folder(const std::vector<std::string>& cmd) {
  for (size_t i = 0; i < cmd.size(); ++i) {
    if (cmd[i] == "--out" && i + 1 < cmd.size()) return cmd[i + 1];
    if (cmd[i].rfind("--out=", 0) == 0) return cmd[i].substr(6);
  }
  return "";
}

void log_restart(const std::string& run, int restart, int max_restarts, const Attempt& a, double backoff) {
  if (run.empty() || !std::filesystem::is_directory(run)) return;
  const std::string metrics = (std::filesystem::path(run) / "metrics.jsonl").string();
  // The step the failed attempt reached (its last step record), read before this row is added.
  const int step = last_logged_step(metrics);
  MetricsWriter(metrics, true)
      .write({{"event", "restart"},
              {"step", step},
              {"restart", restart},
              {"max_restarts", max_restarts},
              {"reason", a.reason},
              {"exit_code", a.exit_code},
              {"backoff_s", backoff},
              {"time", metrics_time_now()}});
}

}  // namespace

int cmd_launch(int argc, char** argv) {
  const char* usage =
      "fivefold launch --max-restarts K [--backoff SECONDS] -- mpirun -np N fivefold train --out RUN ...\n"
      "  (or -- srun ... fivefold train ...). On a failure a restart can cure (a rank died, a hang\n"
      "  ended by collective_timeout) the command runs again and resumes from RUN's latest checkpoint;\n"
      "  the wait before restart i is SECONDS x 2^(i-1) (default 5, at most 300).";
  int max_restarts = -1;
  double backoff = 5;
  int i = 2;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    const std::string w = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc || std::strcmp(argv[i + 1], "--") == 0)
        throw std::runtime_error(fmt::format("{} needs a value\nusage: {}", w, usage));
      return argv[++i];
    };
    if (w == "--help" || w == "-h") return std::puts(usage), 0;
    if (w == "--max-restarts") {
      const std::string v = value();
      char* end = nullptr;
      max_restarts = int(std::strtol(v.c_str(), &end, 10));
      if (*end || max_restarts < 0)
        throw std::runtime_error("--max-restarts must be an integer >= 0, got '" + v + "'");
    } else if (w == "--backoff") {
      const std::string v = value();
      char* end = nullptr;
      backoff = std::strtod(v.c_str(), &end);
      if (*end || !(backoff >= 0) || !std::isfinite(backoff))
        throw std::runtime_error("--backoff must be a number of seconds >= 0, got '" + v + "'");
    } else {
      throw std::runtime_error(fmt::format("unknown option '{}'\nusage: {}", w, usage));
    }
  }
  if (max_restarts < 0)
    throw std::runtime_error(std::string("--max-restarts K is required\nusage: ") + usage);
  if (i + 1 >= argc) throw std::runtime_error(std::string("no command after --\nusage: ") + usage);
  const std::vector<std::string> cmd(argv + i + 1, argv + argc);
  const std::string run = run_folder(cmd);
  std::vector<std::string> history;
  forward_stop_signals();
  for (int restart = 0;; ++restart) {
    const Attempt a = run_once(cmd);
    if (const int sig = g_stop_signal.load()) {
      // A deliberate stop: the job has saved (or was aborted by a second signal); never restart it.
      std::fprintf(stderr, "fivefold launch: stopped by %s; the job exited with status %d and is not restarted\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", a.exit_code);  // launch handles only these two
      return a.exit_code;
    }
    if (a.exit_code == 0) {
      std::printf("fivefold launch: the job finished%s\n",
                  restart == 0 ? "" : fmt::format(" after {} restart(s)", restart).c_str());
      return 0;
    }
    history.push_back(a.reason);
    if (!a.restartable || restart == max_restarts) {
      std::fprintf(stderr, "fivefold launch: giving up: %s after %d restart(s) of at most %d. Failures:\n",
                   a.restartable ? "the restart budget is spent" : "this failure would recur on restart",
                   restart, max_restarts);
      for (size_t k = 0; k < history.size(); ++k)
        std::fprintf(stderr, "  %zu. %s\n", k + 1, history[k].c_str());
      return a.exit_code;
    }
    const double wait = std::min(300.0, backoff * std::pow(2.0, restart));
    std::fprintf(stderr,
                 "fivefold launch: %s. Restart %d of %d in %.1f s; training resumes from the latest complete "
                 "checkpoint%s\n",
                 a.reason.c_str(), restart + 1, max_restarts, wait,
                 run.empty() ? "" : (" in " + run).c_str());
    log_restart(run, restart + 1, max_restarts, a, wait);
    // In short naps, so that a stop signal during the back-off ends launch without a restart.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait);
    while (std::chrono::steady_clock::now() < until && g_stop_signal.load() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (const int sig = g_stop_signal.load()) {
      std::fprintf(stderr, "fivefold launch: stopped by %s before restart %d\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                   restart + 1);
      return 128 + sig;
    }
  }
}

}  // namespace ff::cli
