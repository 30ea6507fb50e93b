// The data-parallel modes (local_sgd, diloco, async) on a toy, under mpirun (2 or 3 ranks): every
// rank's gradient is a known function of its rank, the step and its parameters, so the test
// simulates every replica itself in double precision (its own AdamW, group_toys.h) and checks each
// rank's parameters after every step:
//   local_sgd H=3: H AdamW steps per replica on its own gradient, then the parameters averaged;
//   diloco H=2 (outer lr 0.7, Nesterov 0.9): the outer step on Δ = θ_global − mean(θ_local); the
//     same run against the reversed sign (Δ = mean − θ_global) must FAIL, proving the check sees it;
//   async s=1, 2: the mean gradient of step t applied at step t + s (AdamW step t), nothing before;
//   async s=0 against sync DP (ReplicatedState with its bucketed all-reduce): bitwise;
//   optimizer = sgd: local_sgd H=3 and diloco H=2, whose replicas carry their SGD steps as a
//     displacement from the round's start (sgd_displacement.h), against plain SGD simulated.
// Also bytes: local_sgd/diloco move Ψ floats (bf16: Ψ halves) once per H steps, sync every step.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "group_toys.h"
#include "parallel/data/local_replica_state.h"
#include "parallel/data/replicated_state.h"
#include "fill_state.h"

using namespace ff;

namespace {

constexpr size_t kN = 64;
constexpr int kSteps = 8;
const AdamWConfig kAdam{0.9f, 0.95f, 1e-8f, 0.1f};
const AdamWConfig kSgd{0.9f, 0.95f, 1e-8f, 0.1f, OptimizerKind::sgd};

float lr_at(int k) { return 0.05f / float(k); }  // any schedule: the test must follow the one passed

// Replica r's gradient at parameters p on step k (a quadratic pulling each rank to its own
// target, plus a per-step wobble), so replicas that step alone really drift apart.
double grad_of(int r, int k, size_t i, double p) {
  const double target = std::sin(0.3 * double(i) + r);
  return 0.5 * (p - target) + 0.1 * std::cos(double(k * 7 + i) + 2.0 * r);
}

ParamGroupSpec toy_spec(const Comm& comm) {
  ParamGroupSpec g;
  g.name = "toy";
  testkit::add_segment(g, 0, kN);
  g.comm = &comm;
  return g;
}

std::vector<float> initial() {
  std::vector<float> p(kN);
  for (size_t i = 0; i < kN; ++i) p[i] = float(0.1 * std::cos(double(i)));
  return p;
}

std::vector<float> read_params(ModelState& s) {
  const ParamSegment seg{0, kN};
  const float* p = s.params().acquire(seg, {}).f32();
  std::vector<float> out(p, p + kN);
  s.params().release(seg);
  return out;
}

// One trainer-like step: this rank's contribution g / dp (the trainer scales by 1/global batch),
// then finish, then AdamW at step k.
void step(ModelState& s, int rank, int dp, int k) {
  const std::vector<float> p = read_params(s);
  s.zero_grads();
  const ParamSegment seg{0, kN};
  GradSink& sink = s.grads(true);
  float* g = sink.acquire(seg).f32();
  for (size_t i = 0; i < kN; ++i) g[i] = float(grad_of(rank, k, i, p[i]) / dp);
  sink.release(seg);
  s.finish_grads();
  s.optimizer_step(lr_at(k), k);
}

std::unique_ptr<ModelState> make_state(const Comm& comm, DpModeConfig mode, const AdamWConfig& opt) {
  DataParallelConfig cfg;
  cfg.mode = mode;
  std::unique_ptr<ModelState> s;
  if (mode.mode == DpMode::sync) {
    static std::unique_ptr<GroupLayout> layout;  // the state keeps a reference
    layout = std::make_unique<GroupLayout>(toy_spec(comm), nullptr);
    s = std::make_unique<ReplicatedState>(*layout, opt, cfg, &comm, nullptr);
  } else {
    s = make_dp_mode_group_state(toy_spec(comm), nullptr, opt, cfg, nullptr);
  }
  const std::vector<float> p = initial(), zeros(kN, 0.0f);
  testkit::fill_state(*s, p.data(), zeros.data(), zeros.data());
  return s;
}

// The trajectory of rank `me`'s parameters under `mode`, simulated for every replica in double.
std::vector<std::vector<double>> expected(const DpModeConfig& mode, int dp, int me, bool reversed_sign = false,
                                          const AdamWConfig& opt = kAdam) {
  std::vector<char> decays(kN, 1);
  for (size_t i = kN - 7; i < kN; ++i) decays[i] = 0;
  struct Replica {
    std::vector<double> p, m, v;
  };
  // AdamW, or SGD with the same decoupled decay: p ← p·(1 − lr·wd) − lr·g.
  auto opt_step = [&](Replica& R, float lr, int k, const std::function<double(size_t)>& grad) {
    if (opt.kind == OptimizerKind::adamw) return testkit::serial_adamw_step(R.p, R.m, R.v, decays, opt, lr, k, grad);
    for (size_t i = 0; i < kN; ++i) {
      const double g = grad(i);
      R.p[i] = R.p[i] * (decays[i] ? 1.0 - double(lr) * opt.weight_decay : 1.0) - double(lr) * g;
    }
  };
  const std::vector<float> init = initial();
  const Replica fresh{std::vector<double>(init.begin(), init.end()), std::vector<double>(kN), std::vector<double>(kN)};
  std::vector<Replica> R(dp, fresh);
  Replica one = fresh;  // sync / async: every replica holds the same
  std::vector<double> global = fresh.p, mom(kN, 0.0);
  std::vector<std::vector<double>> mean_grads, out;
  for (int k = 1; k <= kSteps; ++k) {
    if (mode.mode == DpMode::local_sgd || mode.mode == DpMode::diloco) {
      for (int r = 0; r < dp; ++r)
        opt_step(R[r], lr_at(k), k, [&](size_t i) { return grad_of(r, k, i, R[r].p[i]); });
      if (k % mode.sync_every == 0) {
        std::vector<double> mean(kN, 0.0);
        for (int r = 0; r < dp; ++r)
          for (size_t i = 0; i < kN; ++i) mean[i] += R[r].p[i] / dp;
        if (mode.mode == DpMode::diloco)
          for (size_t i = 0; i < kN; ++i) {
            const double delta = reversed_sign ? mean[i] - global[i] : global[i] - mean[i];
            mom[i] = mode.outer_momentum * mom[i] + delta;
            global[i] -= mode.outer_lr * (delta + mode.outer_momentum * mom[i]);
            mean[i] = global[i];
          }
        for (int r = 0; r < dp; ++r) R[r].p = mean;
      }
      out.push_back(R[me].p);
    } else {
      std::vector<double> g(kN, 0.0);
      for (int r = 0; r < dp; ++r)
        for (size_t i = 0; i < kN; ++i) g[i] += grad_of(r, k, i, one.p[i]) / dp;
      mean_grads.push_back(g);
      const int s = mode.mode == DpMode::async ? mode.max_staleness : 0;
      if (k > s)
        opt_step(one, lr_at(k), k - s, [&](size_t i) { return mean_grads[size_t(k - 1 - s)][i]; });
      out.push_back(one.p);
    }
  }
  return out;
}

struct Run {
  std::vector<std::vector<float>> params;  // after each step
  uint64_t all_reduce_bytes = 0;
};

Run run(const Comm& comm, const DpModeConfig& mode, const AdamWConfig& opt = kAdam) {
  std::unique_ptr<ModelState> s = make_state(comm, mode, opt);
  comm.reset_stats();
  Run r;
  for (int k = 1; k <= kSteps; ++k) {
    step(*s, comm.rank(), comm.size(), k);
    r.params.push_back(read_params(*s));
  }
  r.all_reduce_bytes = comm.stats().bytes_of(CommOpKind::all_reduce);
  return r;
}

// Worst |actual - expected| over steps and elements, and whether every element is close.
bool matches(const Run& a, const std::vector<std::vector<double>>& e, double* worst) {
  bool ok = true;
  *worst = 0;
  for (int k = 0; k < kSteps; ++k)
    for (size_t i = 0; i < kN; ++i) {
      *worst = std::max(*worst, std::fabs(a.params[k][i] - e[k][i]));
      ok = ok && testkit::close(a.params[k][i], e[k][i]);
    }
  return ok;
}

DpModeConfig mode_of(DpMode m, int H = 1, int s = 0, DType pseudo = DType::f32) {
  DpModeConfig c;
  c.mode = m;
  c.sync_every = H;
  c.max_staleness = s;
  c.pseudo_grad = pseudo;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  const int me = world.rank(), dp = world.size();
  const double psi_bytes = 4.0 * kN;
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) ++failures;
    if (me == 0 || !ok) std::printf("rank %d: %s: %s\n", me, what.c_str(), ok ? "ok" : "FAIL");
  };
  double worst = 0;
  // The worst difference of the comparison just made, for the message (evaluated after it).
  auto w = [&] { char b[32]; std::snprintf(b, sizeof b, "%.2e", worst); return std::string(b); };
  bool ok = false;

  const Run sync = run(world, mode_of(DpMode::sync));
  ok = matches(sync, expected(mode_of(DpMode::sync), dp, me), &worst) && sync.all_reduce_bytes == kSteps * psi_bytes;
  check(ok, "sync DP against the double reference (worst " + w() + "), Ψ per step");

  const Run local = run(world, mode_of(DpMode::local_sgd, 3));
  ok = matches(local, expected(mode_of(DpMode::local_sgd, 3), dp, me), &worst);
  check(ok, "local_sgd H=3 against every replica simulated (worst " + w() + ")");
  check(local.all_reduce_bytes == (kSteps / 3) * psi_bytes,
        "local_sgd H=3 all-reduces Ψ at steps 3 and 6 only (" + std::to_string(local.all_reduce_bytes) + " B)");
  // Replicas really stepped alone: between averagings the ranks' parameters differ.
  {
    std::vector<float> other(kN);
    std::memcpy(other.data(), local.params[0].data(), kN * sizeof(float));
    world.broadcast(other.data(), kN, 0);
    check(me == 0 || std::memcmp(other.data(), local.params[0].data(), kN * sizeof(float)) != 0,
          "local_sgd replicas differ after step 1 (they step on their own gradients)");
  }

  DpModeConfig dl = mode_of(DpMode::diloco, 2);
  const Run diloco = run(world, dl);
  ok = matches(diloco, expected(dl, dp, me), &worst);
  check(ok, "diloco H=2 outer Nesterov lr 0.7 momentum 0.9 on Δ = θ_global − mean θ_local (worst " + w() + ")");
  ok = !matches(diloco, expected(dl, dp, me, /*reversed_sign=*/true), &worst) && worst > 1e-2;
  check(ok, "the same run is far from the reversed sign Δ = mean θ_local − θ_global (worst " + w() + ")");
  check(diloco.all_reduce_bytes == kSteps / 2 * psi_bytes, "diloco H=2 all-reduces Ψ fp32 every 2 steps");
  const Run diloco16 = run(world, mode_of(DpMode::diloco, 2, 0, DType::bf16));
  check(diloco16.all_reduce_bytes == kSteps / 2 * psi_bytes / 2, "diloco bf16 pseudo-gradients move half the bytes");
  // bf16 keeps 8 bits of Δ: the trajectory stays within a few bf16 ulps of the fp32 one.
  matches(diloco16, expected(dl, dp, me), &worst);
  check(worst < 5e-3, "diloco bf16 stays within bf16 rounding of the fp32 trajectory (worst " + w() + ")");

  for (int s : {1, 2}) {
    const Run a = run(world, mode_of(DpMode::async, 1, s));
    ok = matches(a, expected(mode_of(DpMode::async, 1, s), dp, me), &worst);
    check(ok, "async s=" + std::to_string(s) + ": step t's mean gradient applied at step t+s (worst " + w() + ")");
    check(a.all_reduce_bytes == kSteps * psi_bytes, "async all-reduces Ψ every step");
  }
  const Run a0 = run(world, mode_of(DpMode::async, 1, 0));
  bool same = true;
  for (int k = 0; k < kSteps; ++k) same = same && a0.params[k] == sync.params[k];
  check(same, "async s=0 equals sync DP bitwise");

  // optimizer = sgd (lr_at changes every step, so the displacement's lr ratios are exercised).
  const Run sgd_sync = run(world, mode_of(DpMode::sync), kSgd);
  ok = matches(sgd_sync, expected(mode_of(DpMode::sync), dp, me, false, kSgd), &worst);
  check(ok, "sgd: sync DP against plain SGD simulated (worst " + w() + ")");
  const Run sgd_local = run(world, mode_of(DpMode::local_sgd, 3), kSgd);
  ok = matches(sgd_local, expected(mode_of(DpMode::local_sgd, 3), dp, me, false, kSgd), &worst);
  check(ok, "sgd: local_sgd H=3 against every replica's SGD simulated (worst " + w() + ")");
  const Run sgd_diloco = run(world, dl, kSgd);
  ok = matches(sgd_diloco, expected(dl, dp, me, false, kSgd), &worst);
  check(ok, "sgd: diloco H=2 against every replica's SGD and the outer step simulated (worst " + w() + ")");
  ok = !matches(sgd_diloco, expected(dl, dp, me, /*reversed_sign=*/true, kSgd), &worst) && worst > 1e-2;
  check(ok, "sgd: the same run is far from the reversed sign (worst " + w() + ")");

  world.all_reduce(&failures, 1);
  if (me == 0) std::printf("%s\n", failures == 0 ? "all passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
