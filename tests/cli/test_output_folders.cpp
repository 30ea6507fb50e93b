// Folders that own themselves, as a user meets them: a command refuses a folder of another kind
// and one of its own kind it would replace (unless --overwrite), leaving every file as it was; a
// second `train` on a running job's folder is refused naming the holder; a lock left by a killed
// job is taken over.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;
namespace fs = std::filesystem;

namespace {

std::string train_args(const std::string& data, const std::string& out, int steps) {
  return "train --config " + config_path("tiny.toml") + " --data " + data + " --out " + out + " --steps " +
         std::to_string(steps) + " --eval-every 0 --threads 1";
}

// `fivefold ARGS > log 2>&1` started in the background; the pid is fivefold's own (sh execs it).
pid_t spawn_fivefold(const std::string& args, const std::string& log) {
  const std::string cmd = "exec " + std::string(FIVEFOLD_BIN) + " " + args + " > " + log + " 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// `mpirun -np RANKS fivefold ARGS`, as root too (the test machines run as root).
CliResult run_fivefold_job(int ranks, const std::string& args) {
  return run_fivefold_with("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(MPIEXEC) +
                               " --oversubscribe -np " + std::to_string(ranks),
                           args);
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Waits (up to a minute) until a started run has written its first metrics row: it is training.
bool wait_until_training(const std::string& run) {
  for (int i = 0; i < 600; ++i) {
    if (read_file(run + "/metrics.jsonl").find("\"step\"") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(OutputFolders, ImportIntoARunWithCheckpointsIsRefusedAndOverwriteReplacesIt) {
  const std::string dir = temp_dir("fold-import"), run = dir + "/run";
  CliResult r = run_fivefold(train_args(tiny_data_dir(), run, 4) + " --ckpt-every 2 --keep-checkpoints 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fivefold("export --ckpt " + run + " --out " + dir + "/hf");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string latest = read_file(run + "/latest");

  r = run_fivefold("import --hf " + dir + "/hf --out " + run);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--out '" + run + "' already holds a run folder (config.toml, latest, metrics.jsonl, "
                                 "step_2), which import would replace; choose a new folder, or pass --overwrite"))
      << r.output;
  EXPECT_TRUE(fs::exists(run + "/step_2")) << "nothing is deleted";
  EXPECT_TRUE(fs::exists(run + "/step_4"));
  EXPECT_FALSE(fs::exists(run + "/step_0"));
  EXPECT_EQ(read_file(run + "/latest"), latest);

  r = run_fivefold("import --hf " + dir + "/hf --out " + run + " --overwrite");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(run + "/step_0"));
  EXPECT_FALSE(fs::exists(run + "/step_2"));
  EXPECT_FALSE(fs::exists(run + "/step_4"));
  EXPECT_TRUE(contains(read_file(run + "/latest"), "step_0")) << read_file(run + "/latest");
  EXPECT_FALSE(fs::exists(run + "/config.toml")) << "the replaced run's config does not describe the import";
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl"));
  EXPECT_FALSE(fs::exists(run + "/.fivefold.lock")) << "released at exit";
}

TEST(OutputFolders, ASecondTrainOnARunningJobsFolderIsRefusedNamingTheHolder) {
  const std::string dir = temp_dir("fold-lock"), run = dir + "/run";
  const std::string args = train_args(tiny_data_dir(), run, 1000) + " --ckpt-every 250";
  const pid_t first = spawn_fivefold(args, dir + "/first.log");
  ASSERT_TRUE(wait_until_training(run)) << read_file(dir + "/first.log");

  const std::string holder = "--out '" + run + "' is in use by train, pid " + std::to_string(first) + " on host " +
                             host_name() + " since ";
  const CliResult second = run_fivefold(args);
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_TRUE(contains(second.output, holder)) << second.output;
  EXPECT_TRUE(contains(second.output, "(lock file " + run + "/.fivefold.lock)")) << second.output;
  EXPECT_FALSE(contains(second.output, "resuming")) << second.output;
  // A job of two ranks: rank 0 is refused and rank 1 ends with it, the message said once.
  const CliResult job = run_fivefold_job(2, args + " --dp 2");
  EXPECT_NE(job.exit_code, 0) << job.output;
  const size_t said = job.output.find(holder);
  EXPECT_NE(said, std::string::npos) << job.output;
  EXPECT_EQ(job.output.find(holder, said + 1), std::string::npos) << job.output;
  EXPECT_FALSE(contains(job.output, "MPI_ABORT")) << "a refusal every rank agrees on, not an abort: " << job.output;
  const int first_exit = wait_exit_code(first);

  // The first finishes as if alone: every step once in metrics.jsonl, its last checkpoint published.
  const std::string log = read_file(dir + "/first.log");
  EXPECT_EQ(first_exit, 0) << log;
  EXPECT_TRUE(contains(read_file(run + "/latest"), "step_1000"));
  const std::string metrics = read_file(run + "/metrics.jsonl");
  for (const char* step : {"\"step\":1,", "\"step\":250,", "\"step\":1000,"}) {
    const size_t at = metrics.find(step);
    EXPECT_NE(at, std::string::npos) << step;
    EXPECT_EQ(metrics.find(step, at + 1), std::string::npos) << step << " appears twice";
  }
  EXPECT_FALSE(fs::exists(run + "/.fivefold.lock")) << "released at exit";
}

TEST(OutputFolders, ALockLeftByAKilledJobIsTakenOver) {
  const std::string dir = temp_dir("fold-stale"), run = dir + "/run";
  const pid_t killed = spawn_fivefold(train_args(tiny_data_dir(), run, 100000), dir + "/killed.log");
  ASSERT_TRUE(wait_until_training(run)) << read_file(dir + "/killed.log");
  ::kill(killed, SIGKILL);
  EXPECT_EQ(wait_exit_code(killed), -1);

  const CliResult r = run_fivefold(train_args(tiny_data_dir(), run, 4));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "train: taking over the lock " + run + "/.fivefold.lock left by train, pid " +
                                     std::to_string(killed) + " on host " + host_name() + " since "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "which ended without releasing it")) << r.output;
  EXPECT_TRUE(contains(read_file(run + "/latest"), "step_4"));
}

TEST(OutputFolders, TrainIntoADataFolderIsRefusedAndItsTokenizerKept) {
  const std::string dir = temp_dir("fold-train-data"), data = dir + "/data";
  fs::copy(tiny_data_dir(), data, fs::copy_options::recursive);
  const std::string tokenizer = read_file(data + "/tokenizer.model");
  const auto files = std::distance(fs::directory_iterator(data), fs::directory_iterator());

  const CliResult r = run_fivefold(train_args(tiny_data_dir(), data, 2));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--out '" + data + "' holds a data folder (meta.json, train-00000.bin, val-00000.bin), "
                                 "and train writes a run folder"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "choose a new folder for train")) << r.output;
  EXPECT_EQ(read_file(data + "/tokenizer.model"), tokenizer);
  EXPECT_EQ(std::distance(fs::directory_iterator(data), fs::directory_iterator()), files) << "nothing written";
}

TEST(OutputFolders, PrepareIntoARunFolderIsRefusedEvenWithOverwrite) {
  const std::string dir = temp_dir("fold-prepare"), run = dir + "/run";
  write_corpus_text(dir + "/text.txt", 600, 5);
  CliResult r = run_fivefold(train_args(tiny_data_dir(), run, 2));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string tokenizer = read_file(run + "/tokenizer.model");
  const std::string prepare = "prepare --one-doc-per-line --text " + dir + "/text.txt --vocab 300 --out ";

  for (const char* extra : {"", " --overwrite"}) {
    r = run_fivefold(prepare + run + extra);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "--out '" + run + "' holds a run folder (config.toml, latest, metrics.jsonl, step_2), "
                                   "and prepare writes a data folder"))
        << r.output;
    EXPECT_EQ(read_file(run + "/tokenizer.model"), tokenizer) << extra;
    EXPECT_FALSE(fs::exists(run + "/meta.json")) << extra;
  }

  // Its own kind: a second prepare replaces the first only when told to.
  r = run_fivefold(prepare + dir + "/data");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fivefold(prepare + dir + "/data");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "already holds a data folder (meta.json, train-00000.bin, val-00000.bin), which "
                                 "prepare would replace; choose a new folder, or pass --overwrite to replace it"))
      << r.output;
  r = run_fivefold(prepare + dir + "/data --overwrite");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(OutputFolders, ExportIntoAnExistingExportIsRefusedAndOverwriteReplacesIt) {
  const std::string dir = temp_dir("fold-export"), run = dir + "/run", hf = dir + "/hf";
  CliResult r = run_fivefold(train_args(tiny_data_dir(), run, 2));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_fivefold("export --ckpt " + run + " --out " + hf);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string f32 = read_file(hf + "/model.safetensors");

  r = run_fivefold("export --ckpt " + run + " --out " + hf + " --dtype bf16");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--out '" + hf + "' already holds an export folder (config.json, model.safetensors), "
                                 "which export would replace"))
      << r.output;
  EXPECT_EQ(read_file(hf + "/model.safetensors"), f32) << "left as it was";

  r = run_fivefold("export --ckpt " + run + " --out " + hf + " --dtype bf16 --overwrite");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string bf16 = read_file(hf + "/model.safetensors");
  EXPECT_LT(bf16.size(), f32.size()) << "replaced by the bf16 export";
}
