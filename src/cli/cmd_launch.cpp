// fivefold launch: the supervisor. Runs `mpirun ... fivefold train ...` (or srun) and, when the job
// fails for a reason a restart can cure (a rank died, the hang watchdog ended it), runs the same
// command again: training resumes from the latest complete checkpoint of its run folder. Each
// restart is printed and logged in RUN/metrics.jsonl with its reason; after --max-restarts it gives
// up with a summary. Errors that a restart would only repeat (bad config, a non-finite stop) end it
// at once. A stop (SIGTERM, SIGINT) is passed to the job as SIGUSR1, the signal mpirun forwards to
// its ranks without tearing the job down; they finish the step, save and exit 75. launch waits,
// does not restart a stopped job, and exits 75 too. A second stop goes to the job as SIGTERM (it
// aborts), a third as SIGKILL to its process group.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "io/metrics.h"
#include "train/stop_signals.h"

namespace ff::cli {

namespace {

// The running job's pid for the signal handler (0: none), the first stop signal launch received
// and how many it has received.
std::atomic<pid_t> g_job{0};
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stops{0};

// What the nth stop launch receives becomes for its job: first a request to save and stop
// (SIGUSR1: fivefold train treats it as SIGTERM, and mpirun forwards it without killing the ranks a
// second later, as it does after forwarding SIGTERM), then an abort, then no more waiting.
void signal_job(pid_t job, int nth) {
  if (nth == 1) ::kill(job, SIGUSR1);
  else if (nth == 2) ::kill(job, SIGTERM);
  else ::kill(-job, SIGKILL);  // the job leads its own process group (see run_once)
}

// Async-signal-safe: atomics and kill only.
extern "C" void launch_on_stop_signal(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  const int nth = g_stops.fetch_add(1) + 1;
  if (const pid_t job = g_job.load(); job > 0) signal_job(job, nth);
}

// SIGTERM and SIGINT are caught while launch runs, restarting interrupted reads and waits.
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = launch_on_stop_signal;
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
// the signs of what went wrong (Open MPI's and Slurm's words for a dead rank or a lost node, the
// watchdog's line). Once such a sign came, the job gets `end_bound_s` to end by itself; then its
// process group is killed: mpirun whose ranks aborted can wait for good on a daemon behind a link
// that is down. The output is read until the job has ended, not until every writer closed the
// pipe (a daemon cut off on another node may hold it open).
Attempt run_once(const std::vector<std::string>& cmd, double end_bound_s) {
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
  // A stop that came between fork and the line above found no job to pass on to.
  if (const int nth = g_stops.load()) signal_job(pid, nth);
  ::close(fds[1]);
  static const std::regex ompi_signal(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+))");
  static const std::regex slurm_task(R"(srun: error: (\S+): task (\d+): (.*))");
  static const std::regex ompi_lost_node(R"(Remote daemon: \S+ on node (\S+))");
  static const std::regex ompi_daemon_failed(R"(ORTE was unable to reliably start one or more daemons)");
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
    } else if (died.empty() && std::regex_search(l, m, ompi_lost_node)) {
      died = fmt::format("node {} lost: mpirun's daemon there stopped answering (the node died or its link is down)",
                         m[1].str());
    } else if (died.empty() && std::regex_search(l, m, ompi_daemon_failed)) {
      died = "an Open MPI daemon on another node died or could not start (a node down or unreachable)";
    } else if (died.empty() && std::regex_search(l, m, slurm_task)) {
      died = fmt::format("rank {} on {} ended: {}", m[2].str(), m[1].str(), m[3].str());
    } else if (hang.empty() && std::regex_search(l, m, watchdog)) {
      hang = fmt::format("hang: rank {}'s watchdog: {}", m[1].str(), m[2].str());
    } else if (error.empty() && std::regex_search(l, m, own_error)) {
      error = l;
    }
  };
  auto consume = [&](const char* data, size_t n) {
    std::fwrite(data, 1, n, stdout);
    std::fflush(stdout);
    line.append(data, n);
    for (size_t nl; (nl = line.find('\n')) != std::string::npos; line.erase(0, nl + 1))
      scan(line.substr(0, nl));
  };
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;  // set by the first sign of failure
  bool killed = false, ended = false, eof = false;
  int status = 0;
  while (!ended) {
    pollfd p{fds[0], POLLIN, 0};
    if (!eof && ::poll(&p, 1, 200) > 0) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) consume(buf, size_t(n));
      else if (n == 0 || errno != EINTR) eof = true;  // every writer gone (or the pipe failed)
    } else if (eof) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    ended = w == pid;
    if (ended) break;
    if (!deadline && (!died.empty() || !hang.empty()))
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(end_bound_s));
    if (deadline && !killed && Clock::now() > *deadline) {
      std::fprintf(stderr, "fivefold launch: the job did not end within %.0f s of its failure; killing it\n",
                   end_bound_s);
      ::kill(-pid, SIGKILL);
      killed = true;
    }
  }
  // What the job wrote before it ended, as far as it is in the pipe already.
  for (pollfd p{fds[0], POLLIN, 0}; !eof && ::poll(&p, 1, 100) > 0;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    consume(buf, size_t(n));
  }
  if (!line.empty()) scan(line);
  ::close(fds[0]);
  g_job = 0;
  Attempt a;
  a.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (a.exit_code == 0) return a;
  // A dead rank or a hang is cured by a restart; an error fivefold itself reported is not (it
  // would recur), unless a rank died first and the error is the others' view of it.
  a.restartable = (!died.empty() || !hang.empty() || error.empty()) && a.exit_code != 127;
  if (a.exit_code == 127) error = "the command could not be started (exit code 127: not found?)";
  if (killed) (died.empty() ? hang : died) += fmt::format("; launch killed the job {:.0f} s later", end_bound_s);
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

// After a job ended: whether it was stopped deliberately (launch passed on a stop, the job exited
// with the stopped status, or it recorded a stop in the run folder since `started`: a SIGTERM sent
// to mpirun itself, whose torn-down pipes may have lost the job's own words). Says so and returns
// the status launch exits with; nullopt for any other ending.
std::optional<int> deliberate_stop(const Attempt& a, const std::string& run, double started) {
  const nlohmann::json rec =
      run.empty() ? nlohmann::json() : last_event_since((std::filesystem::path(run) / "metrics.jsonl").string(),
                                                        "stopped", started);
  const int sig = g_stop_signal.load();
  if (rec.is_null() && sig == 0 && a.exit_code != kStoppedExitCode) return std::nullopt;
  const std::string by = sig ? (sig == SIGINT ? " (launch received SIGINT)" : " (launch received SIGTERM)") : "";
  if (!rec.is_null()) {
    std::fprintf(stderr,
                 "fivefold launch: the job stopped by %s after step %d with its checkpoint %s%s; not restarted. "
                 "Run the same command to resume (exit status %d)\n",
                 rec.value("signal", "a signal").c_str(), rec.value("step", 0), rec.value("checkpoint", "").c_str(),
                 by.c_str(), kStoppedExitCode);
    return kStoppedExitCode;
  }
  std::fprintf(stderr, "fivefold launch: stopped%s; the job exited with status %d and is not restarted\n", by.c_str(),
               a.exit_code);
  return a.exit_code;
}

}  // namespace

int cmd_launch(int argc, char** argv) {
  const char* usage =
      "fivefold launch --max-restarts K [--backoff SECONDS] [--stop-grace SECONDS] -- mpirun -np N fivefold train\n"
      "  --out RUN ... (or -- srun ... fivefold train ...). On a failure a restart can cure (a rank died, a\n"
      "  hang ended by collective_timeout) the command runs again and resumes from RUN's latest checkpoint;\n"
      "  the wait before restart i is SECONDS x 2^(i-1) (default 5, at most 300). SIGTERM or SIGINT to launch\n"
      "  stops the job after its current step with a checkpoint (exit 75); a second one aborts it.\n"
      "  --stop-grace: how long mpirun lets ranks finish and save after a SIGTERM sent to mpirun itself\n"
      "  (Open MPI's odls_base_sigkill_timeout, default 30, as Slurm's KillWait; Open MPI also waits\n"
      "  twice this long before it exits from a job with a nonzero status; an OMPI_MCA_ setting wins).\n"
      "  A job still running 2 x grace + 15 s after its first sign of failure (a dead rank, a lost node, the\n"
      "  watchdog) is killed with its process group and counts as that failure.";
  int dash = 2;
  while (dash < argc && std::strcmp(argv[dash], "--") != 0) ++dash;
  const Args opts = parse_args(dash, argv, 2);
  if (opts.help) return std::puts(usage), 0;
  constexpr double kIntMax = std::numeric_limits<int>::max();
  opts.check({int_option("max-restarts", 0, kIntMax, "restarts after failures"),
              number_option("backoff", 0, 3600, "seconds before the first restart, doubled each time"),
              int_option("stop-grace", 1, 86400, "seconds mpirun waits before killing stopped ranks")},
             usage);
  const int max_restarts = opts.get_int("max-restarts", -1);
  const double backoff = opts.get_double("backoff", 5);
  if (max_restarts < 0) throw std::runtime_error(std::string("--max-restarts K is required\nusage: ") + usage);
  if (dash + 1 >= argc) throw std::runtime_error(std::string("no command after --\nusage: ") + usage);
  const std::vector<std::string> cmd(argv + dash + 1, argv + argc);
  const std::string run = run_folder(cmd);
  // Open MPI kills its ranks 1 s after it forwards a SIGTERM (a scheduler's, or a user's to
  // mpirun): too short to finish a step and save. The job inherits a longer grace. (Its cost:
  // mpirun sleeps twice the grace before exiting from any job that ends with a nonzero status.)
  ::setenv("OMPI_MCA_odls_base_sigkill_timeout", opts.get("stop-grace", "30").c_str(), /*overwrite=*/0);
  // After a failure mpirun sleeps twice the grace in force, then ends: a job still running
  // kEndSlack seconds after that waits on something that will not answer.
  constexpr double kEndSlack = 15;
  const double end_bound_s = 2 * std::atof(std::getenv("OMPI_MCA_odls_base_sigkill_timeout")) + kEndSlack;
  std::vector<std::string> history;
  catch_stop_signals();
  for (int restart = 0;; ++restart) {
    const double started = metrics_time_now();
    const Attempt a = run_once(cmd, end_bound_s);
    if (const auto code = deliberate_stop(a, run, started)) return *code;
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
    // In short naps, so that a stop during the back-off ends launch without a restart.
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait);
    while (std::chrono::steady_clock::now() < until && g_stops.load() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (const int sig = g_stop_signal.load()) {
      std::fprintf(stderr, "fivefold launch: stopped by %s before restart %d\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                   restart + 1);
      return 128 + sig;
    }
  }
}

}  // namespace ff::cli
