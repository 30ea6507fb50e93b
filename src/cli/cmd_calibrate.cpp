#include <cstdio>
#include <string>
#include <thread>

#include "calibrate/calibration.h"
#include "calibrate/routing_run.h"
#include "cli/commands.h"
#include "comm/comm_world.h"
#include "io/atomic_file.h"
#include "train/train_config.h"

namespace ff::cli {

// Measures this machine (and the links between the ranks mpirun started) into a cluster.toml
// for `fivefold plan --cluster`.
int cmd_calibrate(const Args& a) {
  const char* usage =
      "[mpirun -np N] fivefold calibrate --out cluster.toml [--threads T] [--sweeps S (3: each rate the median of S)]\n"
      "              [--routing-run RUN (a serial run of a MoE model: its routing spread over ep ranks)]";
  if (a.help) return std::puts(usage), 0;
  a.only({"out", "threads", "routing-run", "sweeps"}, usage);
  const std::string out = a.require("out", usage);
  // Read before the measurement, so a wrong folder fails at once.
  const RoutingLoad routing = a.has("routing-run") ? read_routing_run(a.get("routing-run")) : RoutingLoad{};
  const Comm& world = comm_world();
  const int local = ranks_on_this_machine();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = a.get_int("threads", std::max(1, cores / local), 1, max_useful_threads(), "threads per rank");
  const int sweeps = a.get_int("sweeps", 3, 1, 100, "sweeps over the kernels' shapes");
  Calibration c = calibrate(world, threads, local, sweeps);
  c.cluster.routing = routing;
  if (world.rank() == 0) {
    write_file_atomic(out, c.toml());
    std::printf("%s\nwritten to %s\n", c.toml().c_str(), out.c_str());
  }
  return 0;
}

}  // namespace ff::cli
