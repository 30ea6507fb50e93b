// Checkpoints hold full tensors, so one saved under any tensor-parallel degree loads under any
// other. Under mpirun -np 4: a tp = 2 checkpoint is evaluated by tp = 1 and tp = 4, and tp = 1
// and tp = 4 checkpoints by tp = 2; each validation loss must equal the saving run's own within
// 1e-5 relative.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "checkpoint_fixtures.h"
#include "train_fixtures.h"
#include "ckpt/checkpoint_state.h"
#include "train/trainer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny(const std::string& data, int tp) {
  TrainConfig c = testkit::tiny_config(data);
  c.steps = 10;
  c.tp = tp, c.dp = 1;
  c.sp = tp > 1;  // sequence parallelism changes nothing a checkpoint holds
  return c;
}

// 10 steps (or the checkpoint in `dir` loaded) over `tp` as the tp group (null: this rank alone).
double train_or_load(const std::string& data, const std::string& dir, const Comm* tp, bool expect_load = false) {
  std::optional<Mesh> mesh;
  if (tp) mesh.emplace(*tp, MeshDegrees{.tp = tp->size()});
  return testkit::train_or_load(tiny(data, tp ? tp->size() : 1), dir, tp ? &*mesh : nullptr, expect_load);
}

constexpr auto compare = testkit::compare_val_loss;

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (world.size() != 4) return std::fprintf(stderr, "run under mpirun -np 4\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const bool pair = world.rank() < 2;
  const Comm tp2 = world.split(pair ? 0 : 1, world.rank());  // ranks {0, 1} and {2, 3}
  int failures = 0;

  const std::string dir_tp2 = testkit::broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("tp2") : "");
  const std::string dir_tp4 = testkit::broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("tp4") : "");
  const std::string dir_tp1 = testkit::broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("tp1") : "");
  double val_tp2 = 0, val_tp1 = 0;
  if (pair) val_tp2 = train_or_load(data, dir_tp2, &tp2);
  const double val_tp4 = train_or_load(data, dir_tp4, &world);
  if (world.rank() == 0) val_tp1 = train_or_load(data, dir_tp1, nullptr);
  world.barrier();

  // tp = 2 -> tp = 4 and tp = 1.
  const double tp2_as_tp4 = train_or_load(data, testkit::copy_checkpoints(world, dir_tp2), &world, true);
  const std::string tp2_copy = testkit::copy_checkpoints(world, dir_tp2);
  if (world.rank() == 0) {
    failures += compare("tp=2 checkpoint loaded with tp=4", val_tp2, tp2_as_tp4);
    failures += compare("tp=2 checkpoint loaded with tp=1", val_tp2, train_or_load(data, tp2_copy, nullptr, true));
  }
  // tp = 4 and tp = 1 -> tp = 2.
  const std::string tp4_copy = testkit::copy_checkpoints(world, dir_tp4);
  const std::string tp1_copy = testkit::copy_checkpoints(world, dir_tp1);
  if (pair) {
    const double tp4_as_tp2 = train_or_load(data, tp4_copy, &tp2, true);
    const double tp1_as_tp2 = train_or_load(data, tp1_copy, &tp2, true);
    if (world.rank() == 0) {
      failures += compare("tp=4 checkpoint loaded with tp=2", val_tp4, tp4_as_tp2);
      failures += compare("tp=1 checkpoint loaded with tp=2", val_tp1, tp1_as_tp2);
      // And the layouts agree with each other: the same 10 steps from the same seed.
      failures += compare("tp=1 run against tp=2 run", val_tp1, val_tp2);
    }
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
