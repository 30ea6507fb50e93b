// Activation memory of a pipeline rank grows with the number of micro-batches under GPipe (all
// forwards before any backward: every micro-batch's activations are held at once) and stays flat
// under 1F1B (rank r holds at most p - r, whatever m). Under mpirun -np 2, each rank trains one step of a
// 4-layer `tiny` with m = 2, 4 and 8 micro-batches and reads the activation bytes its stashes
// take from the memory ledger.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "train_fixtures.h"
#include "train/trainer.h"

using namespace ff;

namespace {

double one_step_activations(const std::string& data, const Comm& pipe, PipeSchedule schedule, int m) {
  using testkit::activation_bytes;
  TrainConfig c = testkit::tiny_config(data);
  c.model.n_layers = 4;
  c.steps = 1;
  c.micro_batch = 2;
  c.grad_accum = m;
  c.pp = 2, c.dp = 1, c.schedule = schedule;
  const double before = activation_bytes();
  const Mesh mesh(pipe, MeshDegrees{.pp = 2});
  Trainer t(c, testkit::temp_dir("mem"), &mesh);
  t.quiet = true;
  t.train_step();
  return activation_bytes() - before;  // the stashes stay allocated for the next step
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (world.size() != 2) return std::fprintf(stderr, "run under mpirun -np 2\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const int r = world.rank();
  int failures = 0;
  double gpipe[3], one_f_one_b[3];
  const int ms[3] = {2, 4, 8};
  for (int i = 0; i < 3; ++i) {
    gpipe[i] = one_step_activations(data, world, PipeSchedule::gpipe, ms[i]);
    one_f_one_b[i] = one_step_activations(data, world, PipeSchedule::one_f_one_b, ms[i]);
  }
  // The model's stashes (the executor's boundary buffers are communication workspace): one
  // micro-batch's worth on this rank, from the m = 2 GPipe run, which holds both.
  const double per_mb = gpipe[0] / 2;
  const int p = 2;
  for (int i = 0; i < 3; ++i) {
    const bool ok = per_mb > 0 && gpipe[i] == per_mb * ms[i] && one_f_one_b[i] == per_mb * std::min(ms[i], p - r);
    std::printf("rank %d, m = %d: activation bytes gpipe %.0f (%.0f micro-batches), 1f1b %.0f (%.0f): %s\n", r, ms[i],
                gpipe[i], gpipe[i] / per_mb, one_f_one_b[i], one_f_one_b[i] / per_mb, ok ? "ok" : "FAIL");
    failures += !ok;
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
