// Where a config meets the machine and the job: the ranks per node, the useful thread count, and
// dp = 0 resolved from the ranks mpirun started.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "train/slurm_tasks.h"
#include "train/train_config.h"

namespace ff {

int ranks_on_this_machine() {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    if (const int n = std::atoi(v); n > 0) return n;
  if (const int n = slurm_tasks_on_this_node(); n > 0) return n;
  return 1;
}

int max_useful_threads() { return 4 * int(std::max(1u, std::thread::hardware_concurrency())); }

void resolve_layout(TrainConfig& c, int world_size) {
  if (c.threads == 0) {
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    c.threads = std::max(1, cores / ranks_on_this_machine());
  }
  const int others = c.tp * c.pp * c.cp;  // (unchanged)
  if (c.dp != 0) return;  // an explicit layout is checked by the Mesh, which names every degree
  if (world_size % others != 0)
    throw std::runtime_error(fmt::format(
        "config: tp ({}) x pp ({}) x cp ({}) = {} does not divide the {} ranks mpirun started; "
        "change -np or the degrees",
        c.tp, c.pp, c.cp, others, world_size));
  c.dp = world_size / others;
}

}  // namespace ff
