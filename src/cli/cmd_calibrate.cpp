#include <cstdio>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "comm/comm_world.h"
#include "io/atomic_file.h"
#include "plan/calibrate.h"
#include "train/train_config.h"

namespace ff::cli {

// Measures this machine (and the links between the ranks mpirun started) into a cluster.toml
// for `fivefold plan --cluster`.
int cmd_calibrate(const Args& a) {
  const char* usage = "[mpirun -np N] fivefold calibrate --out cluster.toml [--threads T]";
  if (a.help) return std::puts(usage), 0;
  a.only({"out", "threads"}, usage);
  const std::string out = a.require("out", usage);
  const Comm& world = comm_world();
  const int local = ranks_on_this_machine();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = a.get_int("threads", std::max(1, cores / local), 1, max_useful_threads(), "threads per rank");
  const Calibration c = calibrate(world, threads, local);
  if (world.rank() == 0) {
    write_file_atomic(out, c.toml());
    std::printf("%s\nwritten to %s\n", c.toml().c_str(), out.c_str());
  }
  return 0;
}

}  // namespace ff::cli
