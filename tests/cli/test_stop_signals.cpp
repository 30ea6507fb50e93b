// Preemption: SIGTERM (a scheduler's notice) to a serial run, to mpirun, or to `fivefold launch`
// stops training after the current step with a complete checkpoint of that step, and resuming
// from it gives losses and gradient norms bitwise equal to a run that was never interrupted. A
// second signal ends the run at once. launch forwards the signal, waits for its job, leaves no
// rank behind and does not restart a deliberate stop.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {

constexpr int kStopped = 75;  // documented in src/train/stop_signals.h and the README
constexpr int kCompare = 40;  // steps past the stop that the resumed run is compared over

std::string mpirun_np2() {
  return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 ";
}

// The grace Open MPI gives ranks between forwarding a SIGTERM and killing them: 1 s by default,
// less than a step and a save may take on a loaded machine. Open MPI also sleeps twice this long
// whenever it ends a job with a nonzero status (a stop included), so the tests' tiny model gets 3 s
// rather than launch's default.
constexpr int kGrace = 3;

// mpirun for a job whose mpirun gets SIGTERM outside launch, given the grace as the README tells
// users to.
std::string mpirun_np2_signalled() {
  return mpirun_np2() + "--mca odls_base_sigkill_timeout " + std::to_string(kGrace) + " ";
}

std::string launch(int max_restarts) {
  return std::string(FIVEFOLD_BIN) + " launch --max-restarts " + std::to_string(max_restarts) +
         " --backoff 0 --stop-grace " + std::to_string(kGrace) + " -- ";
}

// Far more steps than a test runs: each run is stopped by a signal, or by --stop-at.
std::string train_args(const std::string& out) {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out +
         " --steps 100000 --ckpt-every 5 --eval-every 0 --threads 1 --log-every 1000";
}

// (step, loss, grad_norm) of each step row, the doubles as printed.
std::vector<std::string> step_rows(const std::string& run) {
  std::ifstream f(run + "/metrics.jsonl");
  std::vector<std::string> rows;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line.back() != '}') continue;  // a row being written when we looked
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("step") && j.contains("loss"))
      rows.push_back(j["step"].dump() + " " + j["loss"].dump() + " " + j["grad_norm"].dump());
  }
  return rows;
}

int last_step(const std::string& run) {
  const auto rows = step_rows(run);
  return rows.empty() ? 0 : std::stoi(rows.back());
}

// A command started in the background, its output to a file.
struct Job {
  pid_t pid;
  std::string log;
};

Job start(const std::string& command, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + command + " > " + log + " 2>&1").c_str(), (char*)nullptr);
    ::_exit(127);
  }
  return {pid, log};
}

// Waits for the job; returns its exit code, or 128 + the signal that ended it.
int finish(const Job& j) {
  int status = 0;
  while (::waitpid(j.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void wait_for_step(const std::string& run, int step) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (last_step(run) < step && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(last_step(run), step) << "the run never reached step " << step;
}

// Whether the process exists and has not exited (a zombie has: it is only not yet reaped, which in
// a container whose init does not reap may be never).
bool running(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  return !stat.empty() && stat.find(") Z") == std::string::npos;
}

// Pids of live processes whose command line names `needle` (the run's unique folder).
std::vector<pid_t> processes_naming(const std::string& needle) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == ::getpid()) continue;
    std::string cmdline = read_file(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && running(std::stoi(name))) pids.push_back(std::stoi(name));
  }
  return pids;
}

// The mpirun whose command names the run folder, 0 when none.
pid_t mpirun_of(const std::string& run) {
  for (const pid_t p : processes_naming(run))
    if (read_file("/proc/" + std::to_string(p) + "/cmdline").rfind("mpirun", 0) == 0) return p;
  return 0;
}

// The step `latest` names, and that its folder is complete (has a manifest).
int latest_complete_step(const std::string& run) {
  std::string latest = read_file(run + "/latest");
  while (!latest.empty() && (latest.back() == '\n' || latest.back() == ' ')) latest.pop_back();
  EXPECT_TRUE(fs::exists(run + "/" + latest)) << latest;
  EXPECT_FALSE(fs::is_empty(run + "/" + latest));
  return latest.rfind("step_", 0) == 0 ? std::stoi(latest.substr(5)) : -1;
}

// The rows of a run never interrupted, under the same launcher (so the same layout and global
// batch), at least `steps` of them: made once per launcher, again longer when a stop came late (a
// loaded machine may deliver a signal hundreds of tiny steps after it was sent).
const std::vector<std::string>& reference_rows(const std::string& launcher, int steps) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto& rows = cache[launcher];
  if (int(rows.size()) < steps) {
    const std::string run = temp_dir("stop-reference") + "/run";
    const int made = std::max(200, 2 * steps);
    const int r = ::system((launcher + FIVEFOLD_BIN + " " + train_args(run) + " --stop-at " +
                            std::to_string(made) + " > " + run + ".log 2>&1")
                               .c_str());
    EXPECT_EQ(r, 0) << read_file(run + ".log");
    rows = step_rows(run);
  }
  return rows;
}

// After a stop at the step the metrics reached: the checkpoint is that step's, complete; the
// resumed run's rows equal the uninterrupted run's bit for bit.
void expect_resumes_bitwise(const std::string& run, const std::string& launcher) {
  const int stopped = last_step(run);
  EXPECT_EQ(latest_complete_step(run), stopped) << "the checkpoint is not the step the run was on";
  const int until = stopped + kCompare;
  const auto r = ::system((launcher + std::string(FIVEFOLD_BIN) + " " + train_args(run) + " --stop-at " +
                           std::to_string(until) + " > " + run + ".resume.log 2>&1")
                              .c_str());
  ASSERT_EQ(r, 0) << read_file(run + ".resume.log");
  const auto& ref = reference_rows(launcher, until);
  ASSERT_GE(ref.size(), size_t(until));
  const auto got = step_rows(run);
  ASSERT_EQ(got.size(), size_t(until));
  for (int k = 0; k < until; ++k) ASSERT_EQ(got[k], ref[k]) << "step " << k + 1;
}

}  // namespace

TEST(StopSignals, SigtermToASerialRunSavesTheStepItWasOnAndResumesBitwise) {
  const std::string run = temp_dir("stop-serial") + "/run";
  const Job j = start(std::string(FIVEFOLD_BIN) + " " + train_args(run), run + ".log");
  wait_for_step(run, 23);  // between two ckpt_every checkpoints
  ::kill(j.pid, SIGTERM);
  EXPECT_EQ(finish(j), kStopped) << read_file(j.log);
  const std::string log = read_file(j.log);
  EXPECT_NE(log.find("stopped by SIGTERM after step " + std::to_string(last_step(run))), std::string::npos) << log;
  expect_resumes_bitwise(run, "");
}

TEST(StopSignals, ASecondSignalEndsTheRunAtOnce) {
  const std::string run = temp_dir("stop-twice") + "/run";
  // Steps slowed to seconds (a straggler's sleep), so the second signal comes mid-step.
  const Job j = start(std::string(FIVEFOLD_BIN) + " " + train_args(run) + " --simulate-straggler 0:300", run + ".log");
  wait_for_step(run, 1);
  ::kill(j.pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the window where copies merge
  ::kill(j.pid, SIGINT);
  EXPECT_EQ(finish(j), 128 + SIGINT) << read_file(j.log);
  EXPECT_NE(read_file(j.log).find("a second stop signal: ending at once"), std::string::npos) << read_file(j.log);
}

// A scheduler's SIGTERM reaches every process of the job, and mpirun forwards its own copy: the
// ranks see two within milliseconds. That is one stop, saved, not an abort.
TEST(StopSignals, CopiesOfOneStopArrivingTogetherAreOneStop) {
  const std::string run = temp_dir("stop-copies") + "/run";
  const Job j = start(std::string(FIVEFOLD_BIN) + " " + train_args(run), run + ".log");
  wait_for_step(run, 12);
  ::kill(j.pid, SIGTERM);
  ::kill(j.pid, SIGUSR1);
  ::kill(j.pid, SIGTERM);
  EXPECT_EQ(finish(j), kStopped) << read_file(j.log);
  expect_resumes_bitwise(run, "");
}

TEST(StopSignals, SigtermToMpirunStopsBothRanksAtOneStepAndResumesBitwise) {
  const std::string run = temp_dir("stop-mpirun") + "/run";
  const Job j = start(mpirun_np2_signalled() + FIVEFOLD_BIN + " " + train_args(run), run + ".log");
  wait_for_step(run, 17);
  ::kill(j.pid, SIGTERM);
  const int code = finish(j);
  EXPECT_NE(code, 0) << read_file(j.log);
  EXPECT_NE(read_file(run + "/metrics.jsonl").find("\"event\":\"stopped\""), std::string::npos);
  EXPECT_TRUE(processes_naming(run).empty());
  expect_resumes_bitwise(run, mpirun_np2());
}

// SIGUSR1 (Slurm's --signal=USR1@T warning) is forwarded by mpirun without tearing the job down,
// so it needs no grace setting, and mpirun passes on the ranks' exit status.
TEST(StopSignals, Sigusr1ToMpirunStopsWithStatus75AndResumesBitwise) {
  const std::string run = temp_dir("stop-usr1") + "/run";
  const Job j = start(mpirun_np2() + FIVEFOLD_BIN + " " + train_args(run), run + ".log");
  wait_for_step(run, 11);
  ::kill(j.pid, SIGUSR1);
  EXPECT_EQ(finish(j), kStopped) << read_file(j.log);
  EXPECT_NE(read_file(j.log).find("stopped by SIGUSR1 after step " + std::to_string(last_step(run))),
            std::string::npos)
      << read_file(j.log);
  EXPECT_TRUE(processes_naming(run).empty());
  expect_resumes_bitwise(run, mpirun_np2());
}

TEST(StopSignals, SigtermToLaunchStopsTheJobAndDoesNotRestart) {
  const std::string run = temp_dir("stop-launch") + "/run";
  const Job j = start(launch(3) + mpirun_np2() + FIVEFOLD_BIN + " " + train_args(run), run + ".log");
  wait_for_step(run, 9);
  const auto job = processes_naming(run);
  EXPECT_GE(job.size(), 3u) << "launch, mpirun and two ranks should name the run folder";
  ::kill(j.pid, SIGTERM);
  EXPECT_EQ(finish(j), kStopped) << read_file(j.log);
  const std::string log = read_file(j.log);
  EXPECT_NE(log.find("the job stopped by SIGUSR1 after step " + std::to_string(last_step(run))), std::string::npos)
      << log;
  EXPECT_NE(log.find("(launch received SIGTERM); not restarted"), std::string::npos) << log;
  EXPECT_EQ(log.find("Restart 1"), std::string::npos) << log;
  for (const pid_t p : job) EXPECT_FALSE(running(p)) << "pid " << p << " outlived launch";
  expect_resumes_bitwise(run, mpirun_np2());
}

// A SIGTERM to the mpirun under launch (a scheduler signalling the job's processes): mpirun tears
// the job down after launch's grace, the ranks save in it, and launch reads the stop from the run
// folder rather than restarting what looks like a failure.
TEST(StopSignals, SigtermToMpirunUnderLaunchIsAStopNotAFailure) {
  const std::string run = temp_dir("stop-launch-mpirun") + "/run";
  const Job j = start(launch(3) + mpirun_np2() + FIVEFOLD_BIN + " " + train_args(run), run + ".log");
  wait_for_step(run, 9);
  const pid_t mpirun = mpirun_of(run);
  ASSERT_GT(mpirun, 0) << "no mpirun process names the run folder";
  ::kill(mpirun, SIGTERM);
  EXPECT_EQ(finish(j), kStopped) << read_file(j.log);
  const std::string log = read_file(j.log);
  EXPECT_NE(log.find("the job stopped by SIGTERM after step " + std::to_string(last_step(run))), std::string::npos)
      << log;
  EXPECT_EQ(log.find("Restart 1"), std::string::npos) << log;
  EXPECT_TRUE(processes_naming(run).empty());
  expect_resumes_bitwise(run, mpirun_np2());
}

// launch killed outright (SIGKILL: no chance to pass anything on) must not leave its job training
// unsupervised: the kernel sends mpirun SIGTERM as launch dies (PR_SET_PDEATHSIG), and the grace
// launch exported lets the ranks save that step and stop.
TEST(StopSignals, LaunchKilledOutrightStillStopsItsJobWithACheckpoint) {
  const std::string run = temp_dir("stop-launch-killed") + "/run";
  const Job j = start(launch(3) + mpirun_np2() + FIVEFOLD_BIN + " " + train_args(run), run + ".log");
  wait_for_step(run, 9);
  ::kill(j.pid, SIGKILL);
  finish(j);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!processes_naming(run).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(processes_naming(run).empty()) << "the job outlived launch by a minute";
  const std::string metrics = read_file(run + "/metrics.jsonl");
  EXPECT_NE(metrics.find("\"event\":\"stopped\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"signal\":\"SIGTERM\""), std::string::npos) << metrics;
  expect_resumes_bitwise(run, mpirun_np2());
}

// SIGTERM at random moments (mid-step, mid-save: ckpt_every 5 saves often, every other run in the
// background) to launch, to the mpirun under launch, or to a bare mpirun (given a grace).
// FF_STOP_LOOP_RUNS sets the number of runs (ctest's stop_loop_20 runs 20).
TEST(StopSignals, KillLoopAlwaysLeavesACompleteCheckpointThatResumesBitwise) {
  const char* env = std::getenv("FF_STOP_LOOP_RUNS");
  const int runs = env ? std::atoi(env) : 3;
  std::mt19937 rng(2026);
  for (int i = 0; i < runs; ++i) {
    enum Target { to_launch, to_mpirun_under_launch, to_bare_mpirun } target = Target(i % 3);
    SCOPED_TRACE("run " + std::to_string(i) + ", SIGTERM to " +
                 (target == to_launch ? "launch" : target == to_mpirun_under_launch ? "launch's mpirun" : "mpirun"));
    const std::string run = temp_dir("stop-loop") + "/run";
    const std::string train =
        std::string(FIVEFOLD_BIN) + " " + train_args(run) + (i % 2 == 1 ? " --ckpt-async true" : "");
    const Job j = start(target == to_bare_mpirun ? mpirun_np2_signalled() + train : launch(2) + mpirun_np2() + train,
                        run + ".log");
    wait_for_step(run, 3 + int(rng() % 20));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    const pid_t mpirun = target == to_mpirun_under_launch ? mpirun_of(run) : 0;
    ASSERT_TRUE(target != to_mpirun_under_launch || mpirun > 0);
    ::kill(target == to_mpirun_under_launch ? mpirun : j.pid, SIGTERM);
    const int code = finish(j);
    if (target == to_bare_mpirun)
      EXPECT_NE(code, 0) << read_file(j.log);  // mpirun's own status for a job it tore down
    else
      EXPECT_EQ(code, kStopped) << read_file(j.log);
    EXPECT_TRUE(processes_naming(run).empty());
    expect_resumes_bitwise(run, mpirun_np2());
  }
}

namespace {

// The step_N folders a run left.
int checkpoints_in(const std::string& run) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(run)) n += e.path().filename().string().rfind("step_", 0) == 0;
  return n;
}

std::string timed_run(const std::string& run, const std::string& minutes) {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + run +
         " --steps 150 --ckpt-every 0 --keep-checkpoints 1000 --eval-every 0 --threads 1 --log-every 1000"
         " --ckpt-every-minutes " + minutes;
}

}  // namespace

// ckpt_every_minutes saves on rank 0's clock (here every 0.1 s) with no step cadence; 0 turns it
// off (the end's checkpoint only). Under mpirun the ranks agree on rank 0's decision, or the
// collective save would hang.
TEST(StopSignals, TimedCheckpointsFollowRankZerosClock) {
  const std::string off = temp_dir("timed-off") + "/run";
  auto r = run_fivefold(timed_run(off, "0"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(checkpoints_in(off), 1);
  for (const std::string& launcher : {std::string(), mpirun_np2()}) {
    const std::string on = temp_dir("timed-on") + "/run";
    const int code = ::system((launcher + FIVEFOLD_BIN + " " + timed_run(on, "0.00166") + " > " + on +
                               ".log 2>&1").c_str());
    ASSERT_EQ(code, 0) << read_file(on + ".log");
    EXPECT_GE(checkpoints_in(on), 3) << launcher;  // 150 steps take well over 0.3 s
  }
  EXPECT_NE(run_fivefold(timed_run(temp_dir("timed-bad") + "/run", "-1")).output.find("ckpt_every_minutes must be"),
            std::string::npos);
}
