// A data mixture under data parallelism against the serial run, under mpirun:
//   dp_mixture ZERO
// Every rank trains `tiny` for 20 steps on two folders weighted 0.3 / 0.7 with the given ZeRO
// stage (micro-batch 4, evaluating every 10 steps: validation is mixed too); rank 0 then trains
// the serial model on the same global batch and compares per-step losses and gradient norms
// (1e-5 relative), final weights (1e-4) and the validation loss. Every rank must also have drawn
// the same rows per folder as the serial run. Exit code 0 only if all agree.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "mixture_data.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

TrainConfig mixed(const std::string& data, int micro_batch, int dp, int zero) {
  TrainConfig c = testkit::tiny_config(data);
  c.micro_batch = micro_batch;
  c.dp = dp;
  c.zero = zero;
  c.eval_every = 10;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (argc != 2) return std::fprintf(stderr, "usage: dp_mixture ZERO\n"), 2;
  const int zero = std::atoi(argv[1]), n = world.size();
  const std::string data = testkit::broadcast_string(
      world, world.rank() == 0 ? testkit::tiny_data_dir() + ":0.3," + testkit::mixture_partner_dir() + ":0.7" : "");
  const Mesh mesh(world, MeshDegrees{.dp = n});
  int failures = 0;

  Trainer parallel(mixed(data, 4, n, zero), testkit::temp_dir("dp-mix"), &mesh);
  parallel.quiet = true;
  parallel.run();
  const std::vector<float> parallel_weights = parallel.full_params();
  const double parallel_val = parallel.evaluate();  // collective: every rank takes part
  const std::vector<uint64_t> rows = parallel.data_rows_per_folder();

  if (world.rank() == 0) {
    const TrainConfig serial_cfg = mixed(data, 4 * n, 1, 0);
    const testkit::SerialComparison s = testkit::compare_with_serial(parallel, parallel_weights, parallel_val, serial_cfg);
    const bool ok = s.ok();
    std::printf("dp=%d zero=%d mixture 0.3/0.7: worst step-loss rel diff %.2e, worst grad-norm rel diff %.2e, worst "
                "weight diff %.2e, val loss rel diff %.2e; rows %llu + %llu: %s\n",
                n, zero, s.worst_loss, s.worst_grad_norm, s.worst_weight, s.val_diff, (unsigned long long)rows[0],
                (unsigned long long)rows[1], ok ? "ok" : "FAIL");
    failures += !ok;
  }
  // Each rank drew every row of every batch: 20 steps x 4n rows, 30% from the first folder.
  const uint64_t total = 20ull * 4 * uint64_t(n);
  if (rows.size() != 2 || rows[0] + rows[1] != total || std::abs(double(rows[0]) - 0.3 * double(total)) >= 1.0) {
    std::printf("rank %d: rows per folder do not follow the weights\n", world.rank());
    ++failures;
  }
  world.all_reduce(&failures, 1);
  if (world.rank() == 0) std::printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
