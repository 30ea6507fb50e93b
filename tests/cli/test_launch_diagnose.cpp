// The supervisor's decisions and diagnose's reading of flight records, without MPI: a failing
// command is restarted up to the budget, an error fivefold reported itself is not restarted, a
// lost node is named, a job that outlives its failure is killed within a bound, and
// two ranks waiting in different collectives with one sequence number are named as a mismatch.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "temp_dirs.h"

using ff::testkit::run_fivefold;
using ff::testkit::temp_dir;

TEST(Launch, RestartsUpToTheBudgetThenSummarises) {
  const std::string run = temp_dir("launch-budget");
  // A stand-in job that always fails; --out names the run folder whose metrics log the restarts.
  const auto r = run_fivefold("launch --max-restarts 2 --backoff 0 -- sh -c 'exit 3' --out " + run);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("Restart 1 of 2 in 0.0 s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Restart 2 of 2 in 0.0 s"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("giving up: the restart budget is spent after 2 restart(s) of at most 2"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3. the launcher exited with code 3"), std::string::npos) << r.output;
  const std::string metrics = ff::testkit::read_file(run + "/metrics.jsonl");
  EXPECT_NE(metrics.find("\"event\":\"restart\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"restart\":2"), std::string::npos) << metrics;
}

TEST(Launch, AnErrorFivefoldReportedIsNotRestarted) {
  const auto r = run_fivefold(
      "launch --max-restarts 5 --backoff 0 -- sh -c 'echo \"fivefold train: error: config: bad\"; exit 1'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.find("Restart 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("giving up: this failure would recur on restart after 0 restart(s)"),
            std::string::npos)
      << r.output;
}

TEST(Launch, ALostNodeIsNamedAndRestarted) {
  const auto r = run_fivefold(
      "launch --max-restarts 1 --backoff 0 -- sh -c 'echo \"  Remote daemon: [[4242,0],1] on node hostB\"; exit 1'");
  EXPECT_EQ(r.exit_code, 1);
  const std::string said =
      "node hostB lost: mpirun's daemon there stopped answering (the node died or its link is down). Restart 1 of 1";
  EXPECT_NE(r.output.find(said), std::string::npos)
      << r.output;
}

// After its ranks abort, mpirun can wait for good on a daemon behind a dead link, and that daemon
// keeps launch's pipe open. A stand-in: the watchdog's line, then a wait that never ends, with a
// process outside the job's group holding the output open. launch must kill the job 2 x grace +
// 15 s after the line and end without waiting for that holder.
TEST(Launch, AJobThatOutlivesItsFailureIsKilledWithinTheBound) {
  const std::string dir = temp_dir("launch-bound");
  const std::string holder = dir + "/holder.pid";
  const std::string job = "echo \"rank 0: all_reduce #7 waited 5.0 s, past collective_timeout = 5 s: a peer rank\"; "
                          "setsid sh -c \"echo \\$\\$ > " + holder + "; exec sleep 120\" & exec sleep 600";
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_fivefold("launch --max-restarts 0 --stop-grace 1 -- sh -c '" + job + "'");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream pid_file(holder);
  if (int pid = 0; pid_file >> pid && pid > 0) ::kill(pid, SIGKILL);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
  EXPECT_NE(r.output.find("did not end within 17 s of its failure; killing it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hang: rank 0's watchdog: all_reduce #7 waited 5.0 s, past collective_timeout = 5 s; "
                          "launch killed the job 17 s later"),
            std::string::npos)
      << r.output;
  EXPECT_GE(took, 17.0);
  EXPECT_LT(took, 45.0) << "launch waited on the process holding its pipe";
  std::filesystem::remove_all(dir);
}

TEST(Launch, UsageErrorsNameTheOption) {
  EXPECT_NE(run_fivefold("launch -- true").output.find("--max-restarts K is required"), std::string::npos);
  EXPECT_NE(
      run_fivefold("launch --max-restarts -1 -- true").output.find("--max-restarts is -1; it must be an integer between 0"),
      std::string::npos);
  EXPECT_NE(run_fivefold("launch --max-restarts 1 --max-restarts 2 -- true").output.find("given twice"),
            std::string::npos);
  EXPECT_NE(run_fivefold("launch --max-restarts 1 --stop-grace 0 -- true").output.find("--stop-grace is 0"),
            std::string::npos);
  EXPECT_NE(run_fivefold("launch --max-restarts 1 --restarts 2 -- true").output.find("unknown option --restarts"), std::string::npos);
  EXPECT_NE(run_fivefold("launch --max-restarts 1").output.find("no command after --"), std::string::npos);
  EXPECT_EQ(run_fivefold("launch --max-restarts 0 -- true").exit_code, 0);
}

TEST(Diagnose, NamesAMismatchedCollectiveAndAMissingRank) {
  const std::string run = temp_dir("launch-diag");
  std::filesystem::create_directories(run + "/flight");
  auto dump = [&](int rank, const char* op, int bytes) {
    std::ofstream(run + "/flight/rank_" + std::to_string(rank) + ".json")
        << "{\"rank\": " << rank
        << ", \"world_size\": 3, \"reason\": \"r\", \"dumped_at\": 100.0, \"ops\": [\n"
        << "{\"id\": 1, \"op\": \"all_reduce\", \"seq\": 0, \"bytes\": 8, \"group\": [0, 1], \"start\": 1, "
           "\"end\": 2, \"what\": \"\"},\n"
        << "{\"id\": 2, \"op\": \"" << op << "\", \"seq\": 1, \"bytes\": " << bytes
        << ", \"group\": [0, 1], \"start\": 3, \"end\": null, \"what\": \"\"},\n"
        << "{\"id\": 3, \"op\": \"all_reduce\", \"seq\": 0, \"bytes\": 4, \"group\": [0, 2], \"start\": 3, "
           "\"end\": null, \"what\": \"\"}]}\n";
  };
  dump(0, "all_reduce", 400);
  dump(1, "all_gather", 200);
  const auto r = run_fivefold("diagnose " + run);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("mismatched operation #1 on world ranks [0, 1]: rank 0 called all_reduce of 400 bytes, "
                    "rank 1 called all_gather of 200 bytes"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 0 waits in all_reduce #1 on world ranks [0, 1]"), std::string::npos)
      << r.output;
  const auto missing = run_fivefold("diagnose " + run + "/nothing");
  EXPECT_NE(missing.output.find("holds no flight records"), std::string::npos) << missing.output;
}
