// The serial comparison must catch a gradient-scale error. Run under mpirun -np N (N > 1):
//   grad_scale_injection
// N data-parallel ranks train `tiny` with a deliberate bug injected after the gradient reduction:
// the gradients are multiplied by N, i.e. summed over the ranks instead of averaged. AdamW divides
// each update by the root of its second moment, so a uniform scale cancels up to epsilon, and
// clipping (grad_clip = 1) cuts any norm above 1 back to the same vector: losses, weights and
// validation loss stay within their tolerances while the bug is there. Only the gradient norm
// shows it (N times the serial norm). Exit code 0 only if the comparison fails, and fails on the gradient
// norm.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  const int n = world.size();
  if (n < 2) return std::fprintf(stderr, "grad_scale_injection needs at least 2 ranks\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  TrainConfig cfg = testkit::tiny_config(data);
  cfg.dp = n;
  cfg.micro_batch = 4;
  cfg.zero = 1;

  const Mesh mesh(world, MeshDegrees{.dp = n});
  Trainer parallel(cfg, testkit::temp_dir("scaled"), &mesh);
  parallel.quiet = true;
  parallel.after_grads_reduced = [n](ModelState& s) { s.scale_grads(float(n)); };
  parallel.run();
  const std::vector<float> weights = parallel.full_params();
  const double val = parallel.evaluate();

  int failures = 0;
  if (world.rank() == 0) {
    TrainConfig serial = cfg;
    serial.dp = 1;
    serial.zero = 0;
    serial.micro_batch = 4 * n;
    const testkit::SerialComparison s = testkit::compare_with_serial(parallel, weights, val, serial);
    // Every step's norm is N times the serial one (relative difference N - 1), up to the drift
    // of the weights; everything else stays within its parity tolerance, so a comparison
    // without the norm would pass this run.
    const double expected_norm_diff = n - 1;
    const bool caught =
        !s.ok() && std::fabs(s.worst_grad_norm - expected_norm_diff) < 0.05 * expected_norm_diff;
    const bool others_blind = s.worst_loss <= 1e-5 && s.worst_weight <= 1e-4 && s.val_diff <= 1e-5;
    std::printf(
        "dp=%d, gradients summed instead of averaged: worst step-loss rel diff %.2e (tol 1e-5), "
        "worst weight diff %.2e (tol 1e-4), val loss rel diff %.2e; grad-norm rel diff %.3f "
        "(expected %d); comparison %s: %s\n",
        n, s.worst_loss, s.worst_weight, s.val_diff, s.worst_grad_norm, n - 1, s.ok() ? "passed" : "failed",
        caught && others_blind ? "ok" : "FAIL");
    failures += !(caught && others_blind);
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
