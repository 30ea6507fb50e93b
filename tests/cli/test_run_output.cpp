// What a user sees of a training run: a short start-up summary naming the key facts (the whole
// config only with --print-config), a log redirected to a file that is complete up to its last
// line while the job still runs, a line when it evaluates and when it saves, progress lines whose
// tokens/s and MFU are averages over the recent steps, a wall-clock time in every metrics.jsonl
// row, and the supervisor's restart rows carrying the step the failed attempt reached.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {

// configs/tiny.toml over tiny_data_dir (a 320-token vocabulary), counted from the shapes: the
// embedding and the untied head, V x C each; per block two norm weights (C each), q and o C x C,
// k and v C x (2 kv heads x 16), gate, up and down C x F; the final norm.
constexpr long kV = 320, kC = 64, kF = 160, kKv = 2 * 16, kLayers = 2;
constexpr long kTinyParams =
    2 * kV * kC + kLayers * (2 * kC + 2 * kC * kC + 2 * kC * kKv + 3 * kC * kF) + kC;

std::string train_args(const std::string& out) {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out;
}

std::vector<nlohmann::json> metrics_rows(const std::string& run) {
  std::ifstream f(run + "/metrics.jsonl");
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(f, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The lines printed before the first progress line.
std::vector<std::string> lines_before_first_step(const std::string& output) {
  std::istringstream in(output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line) && line.rfind("step ", 0) != 0;) lines.push_back(line);
  return lines;
}

// A process state letter from /proc (T: stopped), or 0 once it is gone.
char process_state(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(") ");
  return close == std::string::npos ? 0 : stat[close + 2];
}

// Waits until the child has stopped itself and its fault plan is used up to `plan_left` bytes
// (the plan is consumed before the signal, so the second stop is told from the first).
bool wait_for_stop(pid_t pid, const std::string& plan, size_t plan_left) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_state(pid) == 'T' && read_file(plan).size() == plan_left) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // it ended instead
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST(RunOutput, TheStartIsAShortSummaryAndTheWholeConfigOnlyWhenAsked) {
  const std::string dir = temp_dir("run_summary"), run = dir + "/run";
  CliResult r = run_fivefold(train_args(run) + " --steps 3 --eval-every 0 --micro-batch 2 --grad-accum 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> summary = lines_before_first_step(r.output);
  EXPECT_LE(summary.size(), 8u) << r.output;
  // The model and its parameter count, the layout, the precision, the global batch in sequences
  // and tokens, the memory estimate, the run folder and how it starts.
  for (const std::string& want :
       {"training " + std::to_string(kTinyParams) + " parameters, 3 steps of 6 x 32 tokens (192 tokens per step), "
        "dp 1, tp 1, pp 1, zero 0",
        std::string("precision fp32"), std::string("model: dim 64, 2 layers, 4 heads (2 kv, head_dim 16), ffn_dim 160"),
        std::string("memory per rank (estimated): "), "run folder: " + fs::absolute(run).lexically_normal().string(),
        std::string("starting fresh: parameters initialised from seed 1337")})
    EXPECT_NE(r.output.find(want), std::string::npos) << "missing '" << want << "' in:\n" << r.output;
  EXPECT_EQ(r.output.find("n_kv_heads = 2"), std::string::npos) << "the config is not printed:\n" << r.output;
  ASSERT_TRUE(fs::exists(run + "/config.toml"));

  // A resumed run says where it continues from, in as few lines; a save in the background says
  // how long training waited for it.
  r = run_fivefold(train_args(run) + " --steps 4 --eval-every 0 --micro-batch 2 --grad-accum 3 --ckpt-async true");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LE(lines_before_first_step(r.output).size(), 9u) << r.output;
  EXPECT_NE(r.output.find("resuming from step 3 of 4"), std::string::npos) << r.output;
  const std::regex waited(R"(checkpoint step_4: training waited [0-9]+\.[0-9]{2} s for it; its files are written )"
                          R"(in the background)");
  EXPECT_TRUE(std::regex_search(r.output, waited)) << r.output;

  // --print-config: the whole resolved config, the text the run folder keeps, before the summary.
  const std::string printed = dir + "/printed";
  r = run_fivefold(train_args(printed) + " --steps 1 --eval-every 0 --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string config = read_file(printed + "/config.toml");
  ASSERT_NE(config.find("n_kv_heads = 2"), std::string::npos) << config;
  const size_t at = r.output.find(config);
  EXPECT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(at, r.output.find("training " + std::to_string(kTinyParams) + " parameters")) << r.output;

  r = run_fivefold(train_args(dir + "/bad") + " --steps 1 --print-config maybe");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--print-config takes no value (or true | false), got 'maybe'"), std::string::npos)
      << r.output;
}

// stdout redirected to a file, as a scheduler does: the job stops itself (the fault plan's
// SIGSTOP) before step 1 and again before step 3, and the file is read while it is stopped.
TEST(RunOutput, ARedirectedLogIsCompleteUpToItsLastLineWhileTheRunGoes) {
  const std::string dir = temp_dir("run_live_log"), run = dir + "/run", log = dir + "/train.log",
                    plan = dir + "/plan";
  std::ofstream(plan) << "STOP 0 1\nSTOP 0 3\n";
  const std::string second_stop = "STOP 0 3\n";
  // Everything the child needs is built before fork: it only redirects and execs.
  std::istringstream words(train_args(run) + " --steps 4 --eval-every 2 --ckpt-every 2 --log-every 1");
  std::vector<std::string> args{FIVEFOLD_BIN};
  for (std::string w; words >> w;) args.push_back(w);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::setenv("FF_FAULT_PLAN", plan.c_str(), 1);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  ::unsetenv("FF_FAULT_PLAN");
  ASSERT_GT(pid, 0);
  // A failed assertion returns early: the stopped child must not outlive the test.
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    ~Reaper() {
      if (reaped) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } child{pid};

  if (!wait_for_stop(pid, plan, second_stop.size()))
    FAIL() << "the run did not stop before step 1:\n" << read_file(log);
  std::string text = read_file(log);
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << "a line cut off mid-way:\n" << text;
  EXPECT_NE(text.find("training " + std::to_string(kTinyParams) + " parameters"), std::string::npos) << text;
  EXPECT_NE(text.find("starting fresh"), std::string::npos) << text;
  EXPECT_EQ(text.find("step     1/4"), std::string::npos) << text;

  ::kill(pid, SIGCONT);
  if (!wait_for_stop(pid, plan, 0)) FAIL() << "the run did not stop before step 3:\n" << read_file(log);
  text = read_file(log);
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << "a line cut off mid-way:\n" << text;
  const size_t step2 = text.find("step     2/4");
  const size_t evaluating = text.find("evaluating after step 2: 2 batches of 4 x 32 validation tokens");
  const size_t saving = text.find("saving checkpoint step_2 to " + run + "/step_2");
  const std::regex saved(R"(checkpoint step_2 saved in [0-9]+\.[0-9]{2} s)");
  EXPECT_NE(text.find("step     1/4"), std::string::npos) << text;
  ASSERT_NE(step2, std::string::npos) << text;
  ASSERT_NE(evaluating, std::string::npos) << text;
  ASSERT_NE(saving, std::string::npos) << text;
  EXPECT_LT(evaluating, step2) << "the evaluation is announced before it runs:\n" << text;
  EXPECT_LT(step2, saving) << text;
  EXPECT_TRUE(std::regex_search(text, saved)) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(step +2/4 \|.*\| val [0-9.]+ \(eval [0-9]+\.[0-9]{2} s\))")))
      << text;
  EXPECT_EQ(text.find("step     3/4"), std::string::npos) << text;

  ::kill(pid, SIGCONT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  child.reaped = true;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  const std::vector<nlohmann::json> rows = metrics_rows(run);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_GE(rows[1].at("eval_seconds").get<double>(), 0.0);
  EXPECT_TRUE(rows[1].contains("val_loss"));
  EXPECT_FALSE(rows[0].contains("eval_seconds"));
}

// Each metrics row keeps its step's own tokens/s and MFU and adds the average over the last 20
// steps (tokens over seconds, leaving out the first step, which pays for warm-up), which is what
// the progress line prints; every row has the wall-clock time.
TEST(RunOutput, ProgressShowsRecentAveragesAndEveryRowHasTheTime) {
  const std::string dir = temp_dir("run_average"), run = dir + "/run";
  const double before = unix_now();
  const CliResult r = run_fivefold(train_args(run) + " --steps 25 --eval-every 0 --log-every 1");
  const double after = unix_now();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<nlohmann::json> rows = metrics_rows(run);
  ASSERT_EQ(rows.size(), 25u);
  const double tokens = 4.0 * 32;  // micro_batch 4 x seq_len 32
  std::vector<double> seconds;
  double last_time = 0;
  for (const nlohmann::json& row : rows) seconds.push_back(row.at("step_seconds").get<double>());
  std::vector<double> average(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    ASSERT_EQ(row.at("step").get<int>(), int(i) + 1);
    const double t = row.at("time").get<double>();
    EXPECT_GE(t, before);
    EXPECT_LE(t, after);
    EXPECT_GE(t, last_time) << "rows are written in time order";
    last_time = t;
    EXPECT_NEAR(row.at("tokens_per_s").get<double>(), tokens / seconds[i], 1e-9 * tokens / seconds[i]);
    double sum_tokens = 0, sum_seconds = 0;
    for (size_t j = i >= 20 ? i - 19 : 1; j <= i; ++j) sum_tokens += tokens, sum_seconds += seconds[j];
    average[i] = i == 0 ? tokens / seconds[0] : sum_tokens / sum_seconds;
    EXPECT_NEAR(row.at("tokens_per_s_avg").get<double>(), average[i], 1e-9 * average[i]) << "step " << i + 1;
    const double mfu_avg = average[i] * row.at("flops_per_token").get<double>() / row.at("peak_flops").get<double>();
    EXPECT_NEAR(row.at("mfu_avg").get<double>(), mfu_avg, 1e-9 * mfu_avg) << "step " << i + 1;
  }
  const std::regex line_re(R"(step +(\d+)/25 \| loss \S+ \| lr \S+ \| (\d+) tok/s \| MFU ([0-9.]+)% \(GEMM ceiling)");
  int matched = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line_re), end; it != end; ++it, ++matched) {
    const size_t i = size_t(std::stoi((*it)[1])) - 1;
    EXPECT_NEAR(std::stod((*it)[2]), average[i], 0.51) << (*it)[0];
    EXPECT_NEAR(std::stod((*it)[3]), 100 * rows[i].at("mfu_avg").get<double>(), 0.051) << (*it)[0];
  }
  EXPECT_EQ(matched, 25) << r.output;
}

// The supervisor restarts a job whose rank died before step 4 (its last checkpoint: step 2): the
// restart row carries the step the attempt had logged (3) and the time; resuming keeps it while the
// steps after the checkpoint are logged once, by the run that repeats them.
TEST(RunOutput, RestartRowsCarryTheStepTheFailedAttemptReached) {
  const std::string dir = temp_dir("run_restart"), run = dir + "/run", plan = dir + "/plan";
  std::ofstream(plan) << "KILL 0 4\n";
  ::setenv("FF_FAULT_PLAN", plan.c_str(), 1);
  const double before = unix_now();
  const CliResult r = run_fivefold("launch --max-restarts 1 --backoff 0 -- " + std::string(FIVEFOLD_BIN) + " " +
                                   train_args(run) + " --steps 6 --ckpt-every 2 --eval-every 0");
  ::unsetenv("FF_FAULT_PLAN");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<int> steps;
  int restarts = 0;
  for (const nlohmann::json& row : metrics_rows(run)) {
    EXPECT_GE(row.at("time").get<double>(), before) << row;
    if (row.contains("event")) {
      ++restarts;
      EXPECT_EQ(row.at("event"), "restart");
      EXPECT_EQ(row.at("step").get<int>(), 3) << row;
    } else {
      steps.push_back(row.at("step").get<int>());
    }
  }
  EXPECT_EQ(restarts, 1);
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3, 4, 5, 6}));
}
