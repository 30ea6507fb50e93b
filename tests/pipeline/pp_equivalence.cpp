// Pipeline parallelism (alone, with data parallelism and ZeRO, with tensor parallelism) against
// the serial spec, run under mpirun with PP x DP x TP ranks:
//   pp_equivalence PP SCHEDULE CHUNKS DP ZERO TP [TIED [RECOMPUTE]]
// TIED = 1 ties the LM head to the embedding: the first and last stage then each hold a copy,
// whose gradients must be summed for the copies to stay equal.
// Every rank trains `tiny` deepened to 4 layers (pp 2) or 8 (pp 4), so that every stage and every
// interleaved chunk holds a block, for 20 steps of 2 x PP micro-batches of 2 sequences; rank 0
// then trains the serial model on the same global batch in-process and compares per-step losses
// (1e-5 relative), final weights (1e-4) and the validation loss (1e-5).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "train_fixtures.h"
#include "shared_data.h"
#include "train/trainer.h"

using namespace ff;

namespace {

TrainConfig tiny(const std::string& data, int layers, int micro_batch, int accum, bool tied, Recompute recompute) {
  TrainConfig c = testkit::tiny_config(data);
  c.model.n_layers = layers;
  c.model.tied_embeddings = tied;
  c.recompute = recompute;
  c.micro_batch = micro_batch;
  c.grad_accum = accum;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (argc < 7 || argc > 9)
    return std::fprintf(stderr, "usage: pp_equivalence PP SCHEDULE CHUNKS DP ZERO TP [TIED [RECOMPUTE]]\n"), 2;
  const bool tied = argc >= 8 && std::atoi(argv[7]) != 0;
  const Recompute recompute = argc == 9 ? recompute_names().parse(argv[8], "RECOMPUTE") : Recompute::none;
  const int pp = std::atoi(argv[1]), chunks = std::atoi(argv[3]), dp = std::atoi(argv[4]),
            zero = std::atoi(argv[5]), tp = std::atoi(argv[6]);
  const PipeSchedule schedule = pipe_schedule_names().parse(argv[2], "SCHEDULE");
  const int layers = pp == 2 ? 4 : 8, mb = 2, accum = 2 * pp;
  const Mesh mesh(world, MeshDegrees{.dp = dp, .tp = tp, .pp = pp});
  const std::string data = testkit::shared_tiny_data_dir(world);

  TrainConfig c = tiny(data, layers, mb, accum, tied, recompute);
  c.pp = pp, c.schedule = schedule, c.chunks = chunks, c.dp = dp, c.zero = zero, c.tp = tp;
  Trainer parallel(c, testkit::temp_dir("pp"), &mesh);
  parallel.quiet = true;
  parallel.run();
  const std::vector<float> parallel_weights = parallel.full_params();
  const double parallel_val = parallel.evaluate();

  int failures = 0;
  if (world.rank() == 0) {
    const testkit::SerialComparison s = testkit::compare_with_serial(
        parallel, parallel_weights, parallel_val, tiny(data, layers, mb * dp, accum, tied, Recompute::none));
    const bool ok = s.ok();
    std::printf("pp=%d %s chunks=%d dp=%d zero=%d tp=%d tied=%d recompute=%s (%d layers, %d micro-batches): worst step-loss rel diff %.2e "
                "(tol 1e-5), worst grad-norm rel diff %.2e (tol 1e-5), worst weight diff %.2e (tol 1e-4), val loss rel diff %.2e: %s\n",
                pp, argv[2], chunks, dp, zero, tp, int(tied), recompute_name(recompute), layers, accum, s.worst_loss, s.worst_grad_norm, s.worst_weight, s.val_diff,
                ok ? "ok" : "FAIL");
    failures += !ok;
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
