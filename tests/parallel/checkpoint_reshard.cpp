// Checkpoints are layout-free: a run saved by N data-parallel ranks under ZeRO stage Z resumes
// serially, and a serial checkpoint resumes under N ranks and stage Z, both continuing as a
// straight serial run would (losses 1e-5 relative, weights 1e-4). Run under mpirun:
//   checkpoint_reshard ZERO
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

TrainConfig tiny(const std::string& data, int dp, int zero, int stop_at) {
  TrainConfig c = testkit::tiny_config(data);
  c.stop_at = stop_at;
  c.micro_batch = 8 / dp;
  c.dp = dp;
  c.zero = zero;
  return c;
}

// Compares steps 11..20 of `resumed` with the straight run; returns 0 when they agree.
int compare(const char* what, const Trainer& resumed, std::vector<float> resumed_weights,
            const Trainer& straight, const std::vector<float>& straight_weights) {
  double worst_loss = 0, worst_weight = 0;
  for (size_t i = 0; i < resumed.history().size(); ++i) {
    const double a = resumed.history()[i].loss, b = straight.history()[10 + i].loss;
    worst_loss = std::max(worst_loss, std::fabs(a - b) / std::fabs(b));
  }
  for (size_t i = 0; i < straight_weights.size(); ++i)
    worst_weight = std::max(worst_weight, double(std::fabs(resumed_weights[i] - straight_weights[i])));
  const bool ok = resumed.history().size() == 10 && worst_loss <= 1e-5 && worst_weight <= 1e-4;
  std::printf("%s: steps 11-20 worst loss rel diff %.2e, final weight diff %.2e: %s\n", what,
              worst_loss, worst_weight, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (argc != 2) return std::fprintf(stderr, "usage: checkpoint_reshard ZERO\n"), 2;
  const int zero = std::atoi(argv[1]), n = world.size();
  using testkit::broadcast_string;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const std::string par_dir = broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("par") : "");
  const std::string ser_dir = broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("ser") : "");
  const Mesh mesh(world, MeshDegrees{.dp = n});
  int failures = 0;

  // Parallel first half; serial first half (rank 0 alone).
  {
    Trainer first(tiny(data, n, zero, 10), par_dir, &mesh);
    first.quiet = true;
    first.run();
  }
  if (world.rank() == 0) {
    Trainer first(tiny(data, 1, 0, 10), ser_dir, nullptr);
    first.quiet = true;
    first.run();
  }
  world.barrier();
  // Serial checkpoint resumed by the parallel layout.
  Trainer par_resumed(tiny(data, n, zero, 0), ser_dir, &mesh);
  par_resumed.quiet = true;
  par_resumed.run();
  const std::vector<float> par_weights = par_resumed.full_params();

  if (world.rank() == 0) {
    Trainer straight(tiny(data, 1, 0, 0), testkit::temp_dir("straight"), nullptr);
    straight.quiet = true;
    straight.run();
    const std::vector<float> straight_weights = straight.full_params();
    // Parallel checkpoint resumed serially.
    Trainer ser_resumed(tiny(data, 1, 0, 0), par_dir, nullptr);
    ser_resumed.quiet = true;
    ser_resumed.run();
    failures += compare(("dp=" + std::to_string(n) + " zero=" + std::to_string(zero) + " -> serial").c_str(),
                        ser_resumed, ser_resumed.full_params(), straight, straight_weights);
    failures += compare(("serial -> dp=" + std::to_string(n) + " zero=" + std::to_string(zero)).c_str(),
                        par_resumed, par_weights, straight, straight_weights);
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
