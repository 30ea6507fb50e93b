// Checkpoints hold the full state (every cp rank holds the same dense parameters), so one saved
// under any context-parallel degree loads under any other. Under mpirun -np 2: a cp = 2
// checkpoint is evaluated by cp = 1 and a cp = 1 checkpoint by cp = 2; each validation loss must
// equal the saving run's own within 1e-5 relative, and the two runs must agree with each other.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "ckpt/checkpoint_state.h"
#include "train/trainer.h"
#include "checkpoint_fixtures.h"
#include "train_fixtures.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

TrainConfig tiny(const std::string& data, int cp) {
  TrainConfig c = testkit::tiny_config(data);
  c.steps = 10;
  c.cp = cp, c.dp = 1;
  return c;
}

// 10 steps (or the checkpoint in `dir` loaded) over `group` as the cp group (null: this rank alone).
double train_or_load(const std::string& data, const std::string& dir, const Comm* group, bool expect_load = false) {
  std::optional<Mesh> mesh;
  if (group) mesh.emplace(*group, MeshDegrees{.cp = group->size()});
  return testkit::train_or_load(tiny(data, group ? group->size() : 1), dir, group ? &*mesh : nullptr, expect_load);
}

constexpr auto compare = testkit::compare_val_loss;

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (world.size() != 2) return std::fprintf(stderr, "run under mpirun -np 2\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  int failures = 0;
  const std::string dir_cp2 = testkit::broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("cp2") : "");
  const std::string dir_cp1 = testkit::broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("cp1") : "");
  const double val_cp2 = train_or_load(data, dir_cp2, &world);
  double val_cp1 = 0;
  if (world.rank() == 0) val_cp1 = train_or_load(data, dir_cp1, nullptr);
  world.barrier();

  const std::string cp2_copy = testkit::copy_checkpoints(world, dir_cp2);
  const std::string cp1_copy = testkit::copy_checkpoints(world, dir_cp1);
  const double cp1_as_cp2 = train_or_load(data, cp1_copy, &world, true);
  if (world.rank() == 0) {
    failures += compare("cp=2 checkpoint loaded with cp=1", val_cp2, train_or_load(data, cp2_copy, nullptr, true));
    failures += compare("cp=1 checkpoint loaded with cp=2", val_cp1, cp1_as_cp2);
    failures += compare("cp=1 run against cp=2 run", val_cp1, val_cp2);
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
