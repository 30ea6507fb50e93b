// fp8 (delayed scaling by tensor identity, amaxes reduced over the stage's ranks) in parallel
// layouts against the serial fp8 run, under mpirun -np 2:
//   dp 2 x ZeRO 0, 1, 2, 3 (ZeRO-2/3 move gradients and gathered weights between buffers: the
//   scales must still follow each tensor), tp 2 + sp, pp 2 (1f1b over 2 micro-batches).
// Every layout trains `tiny` (4 layers) for 8 steps on the same global batch of 8 sequences in
// micro-batches of 4; the serial reference runs those same two micro-batches by accumulation.
// Asserted per layout:
//   - losses and gradient norms against serial fp8 per step: 2e-3 and 2e-2 relative. A layout
//     changes the order of fp32 additions only, but fp8 keeps 2-3 mantissa bits, so a last-bit
//     change moves a value across an fp8 rounding boundary far more often than in bf16;
//   - the scales every tensor used and the amaxes it recorded, every step, are bitwise the same
//     on both ranks (the reduction makes replicas agree; each rank's own amaxes would differ,
//     since each sees other rows);
//   - the same tensors as the serial run (6 per linear layer, keyed by parameter name, not by
//     buffer), and at step 2 (scales from step 1's amaxes, taken over the same two micro-batches
//     with identical weights) dp's scales are bitwise serial's: a max does not depend on where
//     the rows ran. Later steps' scales: dp within 1e-3 relative, tp and pp within 1e-1 (their
//     fp8 noise grows step by step; a gradient's amax moves with it).
// Last, a pp 2 run stopped at step 4 resumes serially onto the serial run's steps 5-8, bit for bit
// (losses, norms, scales, amaxes): each stage's fp8 states are in the checkpoint.
// Seen on Zen 5: dp (every ZeRO stage) and pp bitwise serial's in losses and scales (norms 2e-9);
// tp + sp: losses 1.1e-4, norms 7.6e-3, scales 4.3e-2. With the amax reduction switched off,
// every dp and tp layout fails (ranks' scales differ; scales 0.40 and 0.80 from serial's).
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

constexpr double kLossTol = 2e-3, kNormTol = 2e-2, kDpScaleTol = 1e-3, kScaleTol = 1e-1;

TrainConfig tiny_fp8(const std::string& data, int accum) {
  TrainConfig c = testkit::tiny_config(data);
  c.model.n_layers = 4;  // two per stage at pp = 2
  c.steps = 8;
  c.micro_batch = 4;
  c.grad_accum = accum;
  c.precision = Precision::fp8;
  return c;
}

struct Layout {
  int dp, zero, tp;
  bool sp;
  int pp;
};

struct Run {
  std::vector<StepRecord> history;
  std::map<Fp8Recipe::Key, Fp8Recipe::Log> logs;
};

// Every scale and amax of every tensor, in key order.
std::vector<float> flatten(const std::map<Fp8Recipe::Key, Fp8Recipe::Log>& logs) {
  std::vector<float> out;
  for (const auto& [key, log] : logs) {
    out.insert(out.end(), log.scales.begin(), log.scales.end());
    out.insert(out.end(), log.amaxes.begin(), log.amaxes.end());
  }
  return out;
}

double rel(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (world.size() != 2) return std::fprintf(stderr, "fp8_layouts runs under mpirun -np 2\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  Run serial;
  if (world.rank() == 0) {
    Trainer t(tiny_fp8(data, 2), testkit::temp_dir("fp8_serial"), nullptr);
    t.quiet = true;
    t.run();
    serial = {t.history(), t.fp8_scaling()->keyed_logs()};
  }
  int failures = 0;
  for (const Layout l : {Layout{2, 0, 1, false, 1}, Layout{2, 1, 1, false, 1}, Layout{2, 2, 1, false, 1},
                         Layout{2, 3, 1, false, 1}, Layout{1, 0, 2, true, 1}, Layout{1, 0, 1, false, 2}}) {
    const Mesh mesh(world, MeshDegrees{.dp = l.dp, .tp = l.tp, .pp = l.pp});
    TrainConfig c = tiny_fp8(data, l.dp > 1 ? 1 : 2);
    c.dp = l.dp, c.zero = l.zero, c.tp = l.tp, c.sp = l.sp, c.pp = l.pp;
    Trainer t(c, testkit::temp_dir("fp8"), &mesh);
    t.quiet = true;
    t.run();
    const auto logs = t.fp8_scaling()->keyed_logs();
    // Bitwise agreement of the ranks (pp: each stage holds its own tensors, nothing to agree on).
    bool ranks_agree = true;
    if (l.pp == 1) {
      std::vector<float> lo = flatten(logs), hi = lo;
      int n = int(lo.size()), n_max = n;
      world.all_reduce(&n_max, 1, ReduceOp::max);
      ranks_agree = n == n_max;
      if (ranks_agree) {
        world.all_reduce(lo.data(), lo.size(), ReduceOp::min);
        world.all_reduce(hi.data(), hi.size(), ReduceOp::max);
        ranks_agree = lo == hi;
      }
    }
    // The last stage's tensors travel to rank 0 for pp: rank 0 compares its own.
    if (world.rank() != 0) {
      int bad = !ranks_agree;
      world.all_reduce(&bad, 1);
      failures += bad;
      continue;
    }
    double loss = 0, norm = 0, scale = 0;
    for (size_t i = 0; i < serial.history.size() && i < t.history().size(); ++i) {
      loss = std::max(loss, rel(t.history()[i].loss, serial.history[i].loss));
      norm = std::max(norm, rel(t.history()[i].grad_norm, serial.history[i].grad_norm));
    }
    bool same_tensors = l.pp > 1 ? logs.size() < serial.logs.size() : logs.size() == serial.logs.size();
    bool step2_bitwise = true;
    for (const auto& [key, log] : logs) {
      auto it = serial.logs.find(key);
      if (it == serial.logs.end() || it->second.scales.size() != log.scales.size()) {
        same_tensors = false;
        continue;
      }
      for (size_t s = 0; s < log.scales.size(); ++s) scale = std::max(scale, rel(log.scales[s], it->second.scales[s]));
      step2_bitwise &= log.scales.size() > 1 && log.scales[1] == it->second.scales[1];
    }
    const bool dp_only = l.tp == 1 && l.pp == 1;
    const double scale_tol = dp_only ? kDpScaleTol : kScaleTol;
    const bool ok = int(t.history().size()) == c.steps && loss <= kLossTol && norm <= kNormTol &&
                    scale <= scale_tol && same_tensors && ranks_agree && (!dp_only || step2_bitwise);
    std::printf("fp8 dp=%d zero=%d tp=%d sp=%d pp=%d vs serial fp8, %d steps: loss rel %.2e (tol %.0e), norm rel "
                "%.2e (tol %.0e), scales rel %.2e (tol %.0e), %zu tensors %s serial's, ranks' scales %s, step-2 "
                "scales %s: %s\n",
                l.dp, l.zero, l.tp, int(l.sp), l.pp, c.steps, loss, kLossTol, norm, kNormTol, scale, scale_tol,
                logs.size(), same_tensors ? "=" : "!=", ranks_agree ? "bitwise equal" : "DIFFER",
                step2_bitwise ? "bitwise serial's" : "not bitwise serial's", ok ? "ok" : "FAIL");
    int bad = !ok;
    world.all_reduce(&bad, 1);
    failures += bad;
  }
  {
    // Checkpoints hold each stage's fp8 states (saved by the stage's first rank): a pp 2 run stopped
    // at step 4 resumes serially, and since pp 2 is bitwise serial's (above), steps 5-8 must be
    // the serial run's bit for bit, scales and amaxes of every tensor included.
    const Mesh mesh(world, MeshDegrees{.pp = 2});
    TrainConfig c = tiny_fp8(data, 2);
    c.pp = 2, c.stop_at = 4;
    const std::string dir = testkit::broadcast_string(world, testkit::temp_dir("fp8_pp_resume"));
    {
      Trainer t(c, dir, &mesh);
      t.quiet = true;
      t.run();
    }
    int bad = 0;
    if (world.rank() == 0) {
      Trainer t(tiny_fp8(data, 2), dir, nullptr);
      t.quiet = true;
      t.run();
      const auto logs = t.fp8_scaling()->keyed_logs();
      bool ok = t.history().size() == 4 && logs.size() == serial.logs.size();
      for (size_t i = 0; ok && i < 4; ++i)
        ok = t.history()[i].loss == serial.history[4 + i].loss &&
             t.history()[i].grad_norm == serial.history[4 + i].grad_norm;
      size_t restored = 0;
      for (const auto& [key, log] : logs) {
        auto it = serial.logs.find(key);
        ok &= it != serial.logs.end() && log.scales.size() == 4 && log.amaxes.size() == 4;
        if (!ok) break;
        for (size_t s = 0; s < 4; ++s)
          ok &= log.scales[s] == it->second.scales[4 + s] && log.amaxes[s] == it->second.amaxes[4 + s];
        restored += log.scales[0] != 1.0f;
      }
      ok &= restored == logs.size();
      std::printf("fp8 pp=2 stopped at step 4, resumed serially: steps 5-8 losses, norms and %zu tensors' scales "
                  "%s the serial run's: %s\n", logs.size(), ok ? "bitwise" : "NOT", ok ? "ok" : "FAIL");
      bad = !ok;
    }
    world.all_reduce(&bad, 1);
    failures += bad;
  }
  if (world.rank() == 0) std::printf("%s\n", failures == 0 ? "all fp8 layouts agree" : "FAILED");
  return failures == 0 ? 0 : 1;
}
