// init_from under a layout: a model trained 5 steps (configs/tiny.toml, serially) is the start of a
// 10-step run under dp 2 ZeRO-3, tp 2 + sp or pp 2, each rank reading only the boxes it holds. The
// parameters it loaded are the source's (gathered, bitwise), its first loss is the source model's on
// that batch (loaded as `fivefold eval` loads it, 1e-5), and its losses and gradient norms
// equal the serial init_from run's (1e-5 relative; weights 1e-4). With `weights_only`, the start is
// instead a weights-only checkpoint of the same parameters in the run folder itself (what
// `fivefold import` writes), which must train as the serial init_from run does. Run under mpirun:
//   init_from_layouts dp2_zero3|tp2_sp|pp2 [weights_only]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "core/memory.h"
#include "init_from_fixtures.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

constexpr int kSourceSteps = 5, kSteps = 10;

// The source run on rank 0; returns its parameters there (empty elsewhere).
std::vector<float> train_source(const Comm& world, const std::string& data, const std::string& dir) {
  if (world.rank() != 0) return {};
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  c.data = data;
  c.steps = kSourceSteps;
  c.eval_every = 0;
  c.threads = 1;
  Trainer t(c, dir);
  t.quiet = true;
  t.run();
  return t.full_params();
}

// The layout's keys on top of a resolved init_from config; the global batch stays tiny's 4.
bool apply_layout(TrainConfig& c, const std::string& layout) {
  if (layout == "dp2_zero3") {
    c.dp = 2, c.zero = 3, c.micro_batch = 2;
  } else if (layout == "tp2_sp") {
    c.dp = 1, c.tp = 2, c.sp = true;
  } else if (layout == "pp2") {
    c.dp = 1, c.pp = 2, c.grad_accum = 2, c.micro_batch = 2;
    c.eval_batches = 4;  // an evaluation batch is micro_batch x dp windows: the serial run's 2 x 4
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  const std::string layout = argc > 1 ? argv[1] : "";
  const bool weights_only = argc > 2 && std::string(argv[2]) == "weights_only";
  TrainConfig probe;
  if (world.size() != 2 || !apply_layout(probe, layout) || (argc > 2 && !weights_only))
    return std::fprintf(stderr, "usage: mpirun -np 2 init_from_layouts dp2_zero3|tp2_sp|pp2 [weights_only]\n"), 2;
  using testkit::broadcast_string;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const std::string source = broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("source") : "");
  const std::string out = broadcast_string(world, world.rank() == 0 ? testkit::temp_dir("ft") : "");
  const std::vector<float> source_params = train_source(world, data, source);
  if (weights_only && world.rank() == 0) {
    TrainConfig serial = testkit::init_from_config(data, source, testkit::temp_dir("probe"), kSteps);
    testkit::write_weights_only_checkpoint(out, serial.model, source_params, tokenizer_file_in(data));
  }
  world.barrier();

  // The model comes from the checkpoint the run starts from (as `fivefold train` resolves it).
  TrainConfig c = testkit::init_from_config(data, weights_only ? "" : source, out, kSteps);
  c.eval_every = 0;
  apply_layout(c, layout);
  const Mesh mesh(world, MeshDegrees{.dp = c.dp, .tp = c.tp, .pp = c.pp});
  MemoryLedger::instance().reset_peaks();  // rank 0 trained the source serially in this process
  Trainer t(c, out, &mesh);
  t.quiet = true;
  // Loading read straight into this rank's share: under ZeRO-3 the ledger never held the whole
  // model's parameters here (the full copies below are the test's, not the ledger's).
  const int64_t params_peak = MemoryLedger::instance().snapshot().peak[int(MemCategory::params)];
  const std::vector<float> loaded = t.full_params();
  const bool at_step_0 = t.step() == 0;
  t.run();
  const std::vector<float> weights = t.full_params();
  const double expected_first = world.rank() == 0 ? testkit::source_loss_on_first_batch(c, source) : 0.0;
  const double val = t.evaluate();

  int failures = 0;
  if (world.rank() == 0) {
    const bool same = loaded.size() == source_params.size() &&
                      std::memcmp(loaded.data(), source_params.data(), loaded.size() * sizeof(float)) == 0;
    std::printf("%s%s: loaded parameters %s the source's; starts at step 0: %s\n", layout.c_str(),
                weights_only ? " (weights-only folder)" : "", same ? "equal" : "DIFFER from", at_step_0 ? "yes" : "NO");
    failures += !same + !at_step_0;
    if (c.zero == 3) {
      const int64_t whole = int64_t(source_params.size() * sizeof(float));
      std::printf("%s: the ledger's parameter peak on rank 0 after loading %lld bytes, the whole model %lld: %s\n",
                  layout.c_str(), (long long)params_peak, (long long)whole, params_peak < whole ? "ok" : "FAIL");
      failures += !(params_peak < whole);
    }
    // The first step's loss is the source model's on that batch (eval's path, one process).
    const double first = t.history().front().loss, first_diff = std::fabs(first - expected_first) / expected_first;
    std::printf("%s: first loss %.7f, the source model's on that batch %.7f (rel diff %.1e, tol 1e-5): %s\n",
                layout.c_str(), first, expected_first, first_diff, first_diff <= 1e-5 ? "ok" : "FAIL");
    failures += !(first_diff <= 1e-5);
    TrainConfig serial = testkit::init_from_config(data, source, testkit::temp_dir("probe"), kSteps);
    serial.eval_every = 0;
    const testkit::SerialComparison r = testkit::compare_with_serial(t, weights, val, serial);
    std::printf("%s vs serial init_from, %d steps: loss rel diff %.1e, grad norm rel diff %.1e, weights %.1e, val "
                "%.1e: %s\n",
                layout.c_str(), kSteps, r.worst_loss, r.worst_grad_norm, r.worst_weight, r.val_diff,
                r.ok() ? "ok" : "FAIL");
    failures += !r.ok();
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
