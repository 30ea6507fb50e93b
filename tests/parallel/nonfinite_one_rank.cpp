// A NaN on one rank must not hang the others. Run under mpirun -np 2: rank 1 poisons one weight of
// its own replica (DDP: every rank holds a full copy), so only its forward goes non-finite. The
// gradient all-reduce carries the NaN to rank 0, both ranks see the same non-finite norm, both stop
// with the same AgreedError, and the locator names rank 1 and the first tensor the poisoned weight
// feeds. Exit code 0 only if all of that holds on both ranks.
#include <cmath>
#include <cstdio>
#include <string>

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
  world.set_options({.timeout_s = 60});  // a hang fails the test instead of stalling CTest
  if (world.size() != 2) return std::fprintf(stderr, "nonfinite_one_rank needs 2 ranks\n"), 2;
  TrainConfig cfg = testkit::tiny_config(testkit::shared_tiny_data_dir(world));
  cfg.dp = 2;
  cfg.grad_accum = 2;
  const Mesh mesh(world, MeshDegrees{.dp = 2});
  Trainer t(cfg, testkit::temp_dir("nan_one_rank"), &mesh);
  t.quiet = true;
  t.train_step();  // one healthy step first
  if (world.rank() == 1) {
    // The first weight of layer 1's input_layernorm, in this rank's replica only.
    const ParamSegment seg = t.model().layout().block_segment(1);
    float* w = const_cast<float*>(t.state().params().acquire(seg, ParamSegment{}).f32());
    w[0] = NAN;
    t.state().params().release(seg);
  }
  std::string message;
  try {
    t.train_step();
  } catch (const AgreedError& e) {
    message = e.what();
  }
  const bool ok =
      message.find("step 2: the gradient norm became ") != std::string::npos &&
      message.find("nan; the loss became ") != std::string::npos &&
      message.find("micro-batch 0, layer 1, input_layernorm output, on rank 1") != std::string::npos &&
      t.step() == 1;
  std::printf("rank %d: %s: %s\n", world.rank(), ok ? "PASS" : "FAIL", message.c_str());
  int failures = ok ? 0 : 1;
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
