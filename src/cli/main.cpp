// fivefold: the command line. Each subcommand parses its words, hands a plain struct to the
// library, and turns any exception into one clear line and a non-zero exit.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "kernels/cpu_isa.h"
#include "train/stop_signals.h"

namespace {
const char* kUsage =
    "usage: fivefold <command> [--key value ...]\n"
    "  prepare --text FILE --vocab N --out DIR      tokenizer + train/val token shards\n"
    "  train   --config FILE --out DIR [--key v]   train (any config key overridable)\n"
    "  sample  --ckpt DIR --prompt TEXT [--max-tokens N --temperature T --top-k K --seed S]\n"
    "  eval    --ckpt DIR --data FILE               mean loss on a token shard\n"
    "  export  --ckpt DIR --out DIR                 Hugging Face LLaMA folder\n"
    "  schedule --pp P --microbatches M --schedule S [--chunks V]  draw a pipeline schedule\n"
    "  plan    --config FILE --ranks N [--cluster FILE] [--global-batch B] [--json]  rank layouts\n"
    "  verify  --config FILE --layout \"tp=2,pp=2\" [--steps S]  a layout against the serial run\n"
    "  calibrate --out cluster.toml                 measure GEMM, memory and links for plan\n"
    "  report  --runs RUN[,RUN...] --out FILE.png|svg  loss, val loss, tokens/s, memory side by side\n"
    "  import  --hf DIR --out RUN                   a Hugging Face LLaMA folder into a checkpoint\n"
    "  tokenize --tokenizer FILE --input FILE [--ids-out FILE] [--decode]  ids of each line (or text back)\n"
    "  launch  --max-restarts K [--backoff S] -- mpirun ... fivefold train ...   restart a failed job\n"
    "  diagnose RUN                                 name the rank behind a hang (watchdog's records)\n"
    "`fivefold <command> --help` explains a command.\n";
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  // A log redirected to a file is read while the job runs (tail -f, a scheduler's log view): each
  // line goes out whole as it is printed, on every rank. tokenize's stdout is its data, not a log.
  if (cmd != "tokenize") std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  // A job's output goes through pipes that mpirun (or a scheduler) may close while the job saves
  // after a stop signal: a write must then fail, not kill the process mid-checkpoint.
  if (cmd == "train" || cmd == "launch") std::signal(SIGPIPE, SIG_IGN);
  // No MPI in these: the supervisor is the parent of mpirun, and diagnose only reads files.
  if (cmd == "launch" || cmd == "diagnose") {
    try {
      return cmd == "launch" ? ff::cli::cmd_launch(argc, argv) : ff::cli::cmd_diagnose(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fivefold %s: error: %s\n", cmd.c_str(), e.what());
      return 1;
    }
  }
  // Every command runs inside the communication layer: under mpirun each process is a rank,
  // launched plainly it is a world of one.
  // The stop signals go to the thread that runs training (train/stop_signals.h unblocks them
  // there): every thread started from here on (MPI's progress thread, the comm engine, OpenMP's
  // pool) inherits them blocked.
  if (cmd == "train") ff::block_stop_signals();
  ff::CommSession session(&argc, &argv);
  try {
    ff::cli::Args a = ff::cli::parse_args(argc, argv, 2);
    ff::check_kernel_choices();  // a bad FIVEFOLD_AMX* / FIVEFOLD_MAX_CPU_ISA before any folder is touched
    if (cmd == "prepare") return ff::cli::cmd_prepare(a);
    if (cmd == "train") return ff::cli::cmd_train(a);
    if (cmd == "sample") return ff::cli::cmd_sample(a);
    if (cmd == "eval") return ff::cli::cmd_eval(a);
    if (cmd == "export") return ff::cli::cmd_export(a);
    if (cmd == "schedule") return ff::cli::cmd_schedule(a);
    if (cmd == "plan") return ff::cli::cmd_plan(a);
    if (cmd == "verify") return ff::cli::cmd_verify(a);
    if (cmd == "calibrate") return ff::cli::cmd_calibrate(a);
    if (cmd == "report") return ff::cli::cmd_report(a);
    if (cmd == "import") return ff::cli::cmd_import(a);
    if (cmd == "tokenize") return ff::cli::cmd_tokenize(a);
    std::fprintf(stderr, "fivefold: unknown command '%s'\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const ff::AgreedError& e) {
    std::fflush(stdout);
    if (ff::comm_world().rank() == 0) std::fprintf(stderr, "fivefold %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    // With other ranks alive, one rank returning would leave them waiting in a collective:
    // end the whole job instead, naming this rank and the cause.
    if (ff::comm_world().size() > 1) ff::abort_job("fivefold " + cmd + ": error: " + e.what());
    std::fprintf(stderr, "fivefold %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
