// A job that fails on purpose, for check_failure.sh: rank 0 waits in an all-reduce while
// rank 1 calls abort_job ("abort"), kills itself ("sigkill"), or never joins ("timeout", which
// rank 0's watchdog must catch). In every case mpirun must end both ranks and exit non-zero.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "abort" && mode != "sigkill" && mode != "timeout") {
    std::fprintf(stderr, "usage: comm_failure_probe abort|sigkill|timeout (under mpirun -np 2)\n");
    return 2;
  }
  ff::CommSession session(&argc, &argv);
  ff::Comm& world = ff::comm_world();
  if (mode == "timeout") world.set_options({.timeout_s = 2});
  std::vector<float> x(1 << 20, 1.0f);
  if (world.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 is inside the all-reduce
    if (mode == "abort") ff::abort_job("probe: rank 1 gives up on purpose");
    if (mode == "sigkill") std::raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::seconds(120));  // "timeout": never joins
  }
  world.all_reduce(x.data(), x.size());
  std::printf("rank %d: the all-reduce returned, which it must not\n", world.rank());
  return 0;
}
