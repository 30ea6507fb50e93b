// The data-parallel modes (local_sgd, diloco, async) through the Trainer on `tiny`, 2 ranks:
//   bytes: local_sgd and diloco with H = 4 all-reduce 1/H of sync's bytes per step (±1%; the
//     loss's 8 bytes per step are the difference);
//   async with max_staleness 0 equals sync DP bitwise (losses, gradient norms, weights);
//   diloco with H = 1, outer lr 1, no momentum is local SGD with H = 1 (both: every replica's
//     AdamW step, then the mean; FedAvg), to float rounding;
//   a straggler (rank 1 slowed 12x): under async s = 2 rank 0 runs s steps ahead of it and no
//     further; under sync it is never more than 1 step ahead;
//   with optimizer = sgd, local SGD H = 1 and DiLoCo H = 1 (outer lr 1, no momentum) equal sync DP
//     bitwise: losses, the replicas' mean gradient's norm against sync's norm, weights; the same
//     run with the averaging skipped (H > steps) is far from it;
//   DiLoCo's outer state survives a checkpoint bitwise; async s = 2 resumes (s steps apply nothing);
//   lr_scaling's resolved values and the bad-input errors naming their keys.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "kernels/adamw.h"
#include "parallel/data/diloco.h"
#include "shared_data.h"
#include "train/dp_mode_config.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

int failures = 0;
int me = 0;
void check(bool ok, const std::string& what) {
  if (!ok) ++failures;
  if (me == 0 || !ok) std::printf("rank %d: %s: %s\n", me, what.c_str(), ok ? "ok" : "FAIL");
}

TrainConfig tiny(const std::string& data, int steps, const std::string& mode, int dp = 2) {
  TrainConfig c = testkit::tiny_config(data);
  c.steps = steps;
  c.dp = dp;
  c.dp_mode = dp_mode_names().parse(mode, "dp_mode");
  return c;
}

struct Result {
  std::vector<StepRecord> history;
  std::vector<float> weights;
  std::vector<double> step_end;  // steady-clock seconds at the end of each step
  double all_reduce_bytes = 0;
};

// mean_grad_norms: also record, each step, the norm of the replicas' mean gradient, formed as the
// trainer forms sync DP's norm (sqrt of the squared l2_norm).
Result train(const Mesh& mesh, const TrainConfig& c, std::vector<double>* mean_grad_norms = nullptr) {
  Trainer t(c, testkit::temp_dir("modes"), &mesh);
  t.quiet = true;
  if (mean_grad_norms)
    t.after_grads_reduced = [&](ModelState& state) {
      size_t n = 0;
      const float* g = state.segment_grads(ParamSegment{0, t.model().layout().total()}, &n);
      std::vector<float> mean(g, g + n);
      mesh.group(MeshGroup::dp_cp).all_reduce(mean.data(), n);
      scale_inplace(mean.data(), n, 0.5f);
      const double norm = l2_norm(mean.data(), n);
      mean_grad_norms->push_back(std::sqrt(norm * norm));
    };
  const Comm& dense = mesh.group(MeshGroup::dp_cp);
  dense.reset_stats();
  Result r;
  for (int i = 0; i < c.steps; ++i) {
    t.train_step();
    r.step_end.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  r.all_reduce_bytes = double(dense.stats().bytes_of(CommOpKind::all_reduce));
  r.history = t.history();
  r.weights = t.full_params();
  return r;
}

bool bitwise_equal(const Result& a, const Result& b) {
  if (a.history.size() != b.history.size()) return false;
  for (size_t i = 0; i < a.history.size(); ++i)
    if (a.history[i].loss != b.history[i].loss || a.history[i].grad_norm != b.history[i].grad_norm) return false;
  return a.weights == b.weights;
}

double worst_weight_diff(const Result& a, const Result& b) {
  double w = 0;
  for (size_t i = 0; i < a.weights.size(); ++i) w = std::max(w, double(std::fabs(a.weights[i] - b.weights[i])));
  return w;
}

// How many steps rank 0 was ahead of rank 1 at worst: at the end of each of its steps k, k minus
// the steps rank 1 had finished by then (both clocks are this machine's monotonic clock).
int max_lead(const Comm& world, const Result& r) {
  const size_t K = r.step_end.size();
  std::vector<double> all(2 * K, 0.0);
  std::memcpy(all.data() + world.rank() * K, r.step_end.data(), K * sizeof(double));
  world.all_reduce(all.data(), all.size());
  int lead = 0;
  for (size_t k = 0; k < K; ++k) {
    int done = 0;
    for (size_t j = 0; j < K; ++j) done += all[K + j] <= all[k];
    lead = std::max(lead, int(k + 1) - done);
  }
  return lead;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void config_checks(const std::string& data) {
  TrainConfig c = tiny(data, 4, "sync", 4);
  c.micro_batch = 4, c.grad_accum = 2, c.lr = 1e-3f, c.lr_reference_batch = 8;  // global batch 32
  c.lr_scaling = LrScaling::linear;
  resolve_lr_scaling(c);
  check(c.scaled_lr == 4e-3f, "lr_scaling linear: 1e-3 x 32/8 = 4e-3 (got " + std::to_string(c.scaled_lr) + ")");
  c.lr_scaling = LrScaling::sqrt;
  resolve_lr_scaling(c);
  check(c.scaled_lr == 2e-3f, "lr_scaling sqrt: 1e-3 x sqrt(32/8) = 2e-3");
  c.lr_scaling = LrScaling::none;
  resolve_lr_scaling(c);
  check(c.scaled_lr == c.lr, "lr_scaling none leaves lr");
  check(config_to_toml(c).find("scaled_lr = ") != std::string::npos, "the resolved config records scaled_lr");

  struct Bad {
    std::function<void(TrainConfig&)> set;
    const char* must_name;
  };
  const std::vector<Bad> bad = {
      {[](TrainConfig& c) { c.dp_mode = DpMode::diloco; c.dp = 1; }, "dp >= 2"},
      {[](TrainConfig& c) { c.dp_mode = DpMode::local_sgd; c.zero = 2; }, "zero = 2"},
      {[](TrainConfig& c) { c.dp_mode = DpMode::async; c.zero = 1; }, "zero = 1"},
      {[](TrainConfig& c) { c.dp_mode = DpMode::diloco; c.tp = 2; }, "tp = 2"},
      {[](TrainConfig& c) { c.dp_mode = DpMode::local_sgd; c.pp = 2; c.grad_accum = 2; }, "pp = 2"},
      {[](TrainConfig& c) { set_config_key(c, "dp_mode", "lokal_sgd", "in the test"); }, "dp_mode"},
      {[](TrainConfig& c) { c.sync_every = 4; }, "sync_every"},
      {[](TrainConfig& c) { c.max_staleness = 2; }, "max_staleness"},
      {[](TrainConfig& c) { c.dp_mode = DpMode::diloco; c.outer_momentum = 1; }, "outer_momentum"},
      {[](TrainConfig& c) {
         c.dp_mode = DpMode::diloco;
         set_config_key(c, "diloco_pseudo_grad_dtype", "fp8", "in the test");
       },
       "diloco_pseudo_grad_dtype"},
      {[](TrainConfig& c) { c.lr_scaling = LrScaling::linear; }, "lr_reference_batch"},
      {[](TrainConfig& c) { c.lr_scaling = LrScaling::linear; c.lr_reference_batch = 8; c.warmup_steps = 0; }, "warmup_steps"},
      {[](TrainConfig& c) { set_config_key(c, "lr_scaling", "cubic", "in the test"); }, "lr_scaling"},
      {[](TrainConfig& c) { set_config_key(c, "optimizer", "adam", "in the test"); }, "optimizer"},
      {[](TrainConfig& c) { c.simulate_straggler = "1x2"; }, "simulate_straggler"},
      {[](TrainConfig& c) { c.simulate_straggler = "1:0.5"; }, "simulate_straggler"},
  };
  for (const Bad& b : bad) {
    TrainConfig x = tiny(data, 4, "sync");
    // A name the key's table lacks is refused as it is set, the rest by validation.
    const std::string e = error_of([&] {
      b.set(x);
      validate_train_config(x);
    });
    check(e.find(b.must_name) != std::string::npos, "refused naming '" + std::string(b.must_name) + "': " + e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  me = world.rank();
  const std::string data = testkit::shared_tiny_data_dir(world);
  const Mesh mesh(world, MeshDegrees{.dp = 2});
  if (me == 0) config_checks(data);

  // Bytes per step: 8 steps, H = 4.
  const Result sync = train(mesh, tiny(data, 8, "sync"));
  for (const char* mode : {"local_sgd", "diloco"}) {
    TrainConfig c = tiny(data, 8, mode);
    c.sync_every = 4;
    const Result r = train(mesh, c);
    const double ratio = r.all_reduce_bytes / sync.all_reduce_bytes;
    check(std::fabs(ratio - 0.25) <= 0.01 * 0.25,
          std::string(mode) + " H=4 all-reduces " + std::to_string(ratio) + " of sync's bytes per step (1/4 ±1%)");
    check(r.history.back().loss < r.history.front().loss, std::string(mode) + " learns");
  }

  TrainConfig a0 = tiny(data, 8, "async");
  check(bitwise_equal(train(mesh, a0), sync), "async max_staleness 0 equals sync DP bitwise (losses, norms, weights)");

  {
    TrainConfig l = tiny(data, 6, "local_sgd"), d = tiny(data, 6, "diloco");
    d.outer_lr = 1, d.outer_momentum = 0;
    const Result rl = train(mesh, l), rd = train(mesh, d);
    double worst_loss = 0;
    for (size_t i = 0; i < rl.history.size(); ++i)
      worst_loss = std::max(worst_loss, std::fabs(rl.history[i].loss - rd.history[i].loss) / rl.history[i].loss);
    const double ww = worst_weight_diff(rl, rd);
    check(worst_loss <= 1e-6 && ww <= 1e-6, "diloco H=1 outer SGD lr 1 no momentum = local_sgd H=1 (loss " +
                                                std::to_string(worst_loss) + ", weights " + std::to_string(ww) + ")");
  }

  {
    // optimizer = sgd: the mean of the replicas' SGD steps is the SGD step of the mean gradient.
    // grad_clip 0: clipping each replica by its own norm is not clipping the mean. dp = 2, so
    // the all-reduce of two values is one exact-commutative addition on both ranks.
    auto sgd = [&](const char* mode, int H, float wd) {
      TrainConfig c = tiny(data, 10, mode);
      c.optimizer = OptimizerKind::sgd, c.lr = 0.5f, c.grad_clip = 0, c.weight_decay = wd;
      if (H) c.sync_every = H;
      if (std::string(mode) == "diloco") c.outer_lr = 1, c.outer_momentum = 0;
      return c;
    };
    auto same_as_sync = [&](const Result& sync, const Result& r, const std::vector<double>& mean_norms) {
      bool same = r.history.size() == sync.history.size() && mean_norms.size() == sync.history.size() &&
                  r.weights == sync.weights;
      for (size_t i = 0; same && i < sync.history.size(); ++i)
        same = r.history[i].loss == sync.history[i].loss && mean_norms[i] == sync.history[i].grad_norm;
      return same;
    };
    for (float wd : {0.1f, 0.0f}) {
      const Result ref = train(mesh, sgd("sync", 0, wd));
      check(ref.history.back().loss < ref.history.front().loss - 0.05,
            "sgd sync DP learns (loss " + std::to_string(ref.history.front().loss) + " -> " +
                std::to_string(ref.history.back().loss) + ")");
      // DiLoCo's Δ = θ₀ − mean θ folds the decay (1 − S)·θ₀ into Δ, one more rounding: bitwise at wd 0.
      for (const char* mode : wd > 0 ? std::vector<const char*>{"local_sgd"}
                                     : std::vector<const char*>{"local_sgd", "diloco"}) {
        std::vector<double> norms;
        const Result r = train(mesh, sgd(mode, 1, wd), &norms);
        check(same_as_sync(ref, r, norms), std::string(mode) + " H=1, optimizer sgd, weight_decay " +
                                               std::to_string(wd) + ": sync DP bitwise (losses, mean-gradient "
                                               "norms, weights)");
      }
      // The check can fail: skipping the averaging (H beyond the run) leaves the replicas apart.
      std::vector<double> norms;
      const Result apart = train(mesh, sgd("local_sgd", 1000, wd), &norms);
      double worst = 0;
      for (size_t i = 0; i < apart.history.size(); ++i)
        worst = std::max(worst, std::fabs(apart.history[i].loss - ref.history[i].loss));
      check(!same_as_sync(ref, apart, norms) && worst > 1e-3,
            "local_sgd with the averaging skipped is not sync DP (loss differs by " + std::to_string(worst) + ")");
    }
  }

  for (int s : {0, 2}) {
    TrainConfig c = tiny(data, 10, s == 0 ? "sync" : "async");
    c.max_staleness = s;
    c.simulate_straggler = "1:12";
    const int lead = max_lead(world, train(mesh, c));
    const bool ok = s == 0 ? lead <= 1 : lead >= s && lead <= s + 1;
    check(ok, std::string(s == 0 ? "sync" : "async s=2") + " with rank 1 slowed 12x: rank 0 ran at most " +
                  std::to_string(lead) + " steps ahead" + (s ? " (not stalled before s, never beyond s + 1)" : ""));
  }

  {
    // DiLoCo's outer state survives a checkpoint: stop at step 4 (H = 2), resume, compare.
    TrainConfig c = tiny(data, 8, "diloco");
    c.sync_every = 2, c.stop_at = 4;
    const std::string out = testkit::broadcast_string(world, me == 0 ? testkit::temp_dir("diloco_ckpt") : "");
    std::vector<float> global_before, momentum_before;
    {
      Trainer t(c, out, &mesh);
      t.quiet = true;
      t.run();
      for (auto& [name, p] : t.state().extra_state())
        (name == "diloco_global" ? global_before : momentum_before).assign(p, p + t.model().layout().total());
    }
    c.stop_at = 0;
    world.barrier();  // rank 0 has written the checkpoint
    Trainer resumed(c, out, &mesh);
    bool same = resumed.step() == 4;
    for (auto& [name, p] : resumed.state().extra_state()) {
      const std::vector<float>& before = name == "diloco_global" ? global_before : momentum_before;
      same = same && std::memcmp(p, before.data(), before.size() * sizeof(float)) == 0;
    }
    bool moved = false;
    for (float m : momentum_before) moved = moved || m != 0;
    check(same && moved, "diloco's outer state (θ_global, momentum) resumes bitwise from the checkpoint");
  }

  {
    // Async s = 2 resumed at step 4: the gradients in flight are not in the checkpoint, so steps 5
    // and 6 apply none (norm exactly 0, which the non-finite guard must accept: the state says no
    // gradient is due), and from step 7 on the delayed gradients flow again.
    TrainConfig c = tiny(data, 8, "async");
    c.max_staleness = 2, c.stop_at = 4;
    const std::string out = testkit::broadcast_string(world, me == 0 ? testkit::temp_dir("async_ckpt") : "");
    {
      Trainer t(c, out, &mesh);
      t.quiet = true;
      t.run();
    }
    c.stop_at = 0;
    world.barrier();  // rank 0 has written the checkpoint
    Trainer resumed(c, out, &mesh);
    resumed.quiet = true;
    resumed.run();
    const std::vector<StepRecord>& h = resumed.history();
    const bool ok = h.size() == 4 && h[0].step == 5 && h[0].grad_norm == 0 && h[1].grad_norm == 0 &&
                    h[2].grad_norm > 0 && h[3].grad_norm > 0 && std::isfinite(h[3].loss);
    check(ok, "async s=2 resumed at step 4 applies nothing at steps 5-6 (norm 0, not taken for a blow-up), then "
              "steps again to step 8");
  }

  world.all_reduce(&failures, 1);
  if (me == 0) std::printf("%s\n", failures == 0 ? "all passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
