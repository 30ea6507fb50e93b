// Data parallelism against the serial spec, run under mpirun:
//   dp_equivalence ZERO ACCUM [DIM]
// Every rank trains `tiny` (its width DIM when given: 256 makes every gradient bucket and ZeRO
// segment larger than 1 MiB, so across nodes they take Comm's node-first forms) for 20 steps with the given ZeRO stage and gradient accumulation
// (micro-batch 4); rank 0 then trains the serial model on the same global batch (micro-batch
// 4 x N, same accumulation) in-process and
// compares per-step losses and gradient norms (1e-5 relative) and final weights (1e-4). Each rank also checks its
// model-state bytes against the ZeRO formulas for fp32 AdamW. Exit code 0 only if all agree.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "comm/nodes.h"
#include "core/memory.h"
#include "train_fixtures.h"
#include "shared_data.h"
#include "parallel/grouped_state.h"
#include "parallel/zero/sharded_state.h"
#include "train/trainer.h"

using namespace ff;

namespace {

TrainConfig tiny(const std::string& data, int micro_batch, int accum, int dp, int zero, int dim) {
  TrainConfig c = testkit::tiny_config(data);
  if (dim > 0) c.model.dim = dim;
  c.micro_batch = micro_batch;
  c.grad_accum = accum;
  c.dp = dp;
  c.zero = zero;
  return c;
}

// params + grads + optimizer bytes predicted for fp32 AdamW (FORMULAS.md).
double zero_formula_bytes(int zero, double psi, int n) {
  switch (zero) {
    case 0: return 16 * psi;
    case 1: return 8 * psi + 8 * psi / n;
    case 2: return 4 * psi + 12 * psi / n;
    default: return 16 * psi / n;
  }
}

// Bytes each rank puts into collectives per optimizer step (Comm's counters: the payload a rank
// contributes) against what each layout must move (FORMULAS.md: DP and ZeRO-1/2 move 2Ψ, ZeRO-3
// 3Ψ): zero 0 all-reduces Ψ gradients once per step; zero 1 reduce-scatters Ψ once per step and
// all-gathers its own shard of the updated parameters; zero 2 and 3 reduce-scatter Ψ on every
// micro-batch (they keep no full gradient to accumulate in); zero 3 all-gathers its shard for
// every forward and again for every backward, less the segments still resident in its three
// gather buffers (at tiny's 4 segments most stay resident, so the test bounds rather than pins
// it). The loss (and, sharded, the gradient norm) adds one double each.
int check_comm_volume(const Mesh& mesh, const std::string& data, int zero, int accum, int dim) {
  const Comm& world = mesh.world();
  const int n = world.size(), steps = 3;
  Trainer t(tiny(data, 4, accum, n, zero, dim), testkit::temp_dir("volume"), &mesh);
  t.quiet = true;
  const double psi = double(t.model().layout().total()), shard_lo = std::floor(psi / n) * 4,
               shard_hi = std::ceil(psi / n) * 4;
  // The state communicates over the dense group (dp x cp); the loss is summed over the axes dp, cp
  // (the same ranks, so the same communicator).
  const Comm& dense = mesh.group(MeshGroup::dp_cp);
  const Comm& scalars = mesh.group({MeshAxis::dp, MeshAxis::cp});
  testkit::reset_comm_stats({&dense, &scalars});
  for (int i = 0; i < steps; ++i) t.train_step();
  auto per_step = [&](CommOpKind k) { return testkit::comm_bytes_per_step({&dense, &scalars}, k, steps); };
  const double ar = per_step(CommOpKind::all_reduce), rs = per_step(CommOpKind::reduce_scatter),
               ag = per_step(CommOpKind::all_gather);
  bool ok = false;
  if (zero == 0) ok = ar == 4 * psi + 8 && rs == 0 && ag == 0;
  const double rs_expected = 4 * psi * (zero >= 2 ? accum : 1);
  if (zero == 1 || zero == 2) ok = ar == 16 && rs == rs_expected && ag >= shard_lo && ag <= shard_hi;
  if (zero == 3) {
    ok = ar == 16 && rs == rs_expected && ag >= shard_lo && ag <= 2 * shard_hi * accum;
    // Prefetch: in every forward, each block (and the head) finds its gather already started by
    // the segment before it.
    auto& dense = dynamic_cast<GroupedState&>(t.state()).group_state(0);
    const auto* pool = dynamic_cast<ShardedState&>(dense).gather_pool();
    const int min_hits = steps * accum * t.config().model.n_layers;
    if (pool->prefetch_hits() < min_hits) {
      std::printf("rank %d: %d prefetch hits, expected at least %d\n", world.rank(), pool->prefetch_hits(), min_hits);
      ok = false;
    }
  }
  if (!ok)
    std::printf("rank %d zero=%d accum=%d: per step all-reduce %.0f B, reduce-scatter %.0f B, all-gather "
                "%.0f B (psi = %.0f)\n", world.rank(), zero, accum, ar, rs, ag, psi);
  return ok ? 0 : 1;
}

// Across nodes, a model this wide takes Comm's node-first forms (CommOptions: from 1 MiB): the
// bytes this rank sends to other nodes are then half what the flat pairwise algorithm sends. The
// flat figure from the operations' payloads (comm_types.h, CommStats): with L of the n ranks on
// each node, a fraction f = (n - L) / (n - 1) of a rank's peers is off its node, and the flat
// all-reduce sends 2 (n-1)/n S f, the reduce-scatter (n-1)/n S f, the all-gather (n-1) c f.
int check_node_first(const Mesh& mesh, const std::string& data, int zero, int accum, int dim) {
  const Comm& world = mesh.world();
  const int n = world.size(), nodes = node_count(), steps = 3;
  if (nodes < 2) return 0;  // one host: nothing crosses
  Trainer t(tiny(data, 4, accum, n, zero, dim), testkit::temp_dir("node_first"), &mesh);
  t.quiet = true;
  const Comm& dense = mesh.group(MeshGroup::dp_cp);
  const Comm& scalars = mesh.group({MeshAxis::dp, MeshAxis::cp});
  testkit::reset_comm_stats({&dense, &scalars});
  for (int i = 0; i < steps; ++i) t.train_step();
  double sent_across = 0, flat = 0;
  const double f = double(n - n / nodes) / (n - 1), m = double(n - 1) / n;
  for (const Comm* c : std::set<const Comm*>{&dense, &scalars}) {
    const CommStats& s = c->stats();
    sent_across += double(s.cross_node_bytes);
    flat += 2 * m * f * double(s.bytes_of(CommOpKind::all_reduce)) + m * f * double(s.bytes_of(CommOpKind::reduce_scatter)) +
            (n - 1) * f * double(s.bytes_of(CommOpKind::all_gather));
  }
  // What goes node first: DDP's one bucket (all psi parameters, 3.2 MB) whole; under ZeRO each
  // block's segment (its weights, about 1.3 MB) but not the embedding's or the head's (vocab x dim,
  // 0.3 MB), which stay flat. So the share of the flat bytes sent is 0.5 for DDP and
  // (0.5 B + (psi - B)) / psi under ZeRO, B the blocks' parameters (counted here from the shape).
  const ModelConfig& mc = t.config().model;
  const double head_dim = double(mc.dim) / mc.n_heads;
  const double block = 2.0 * mc.dim * mc.dim + 2.0 * mc.dim * mc.n_kv_heads * head_dim + 3.0 * mc.dim * mc.ffn_dim + 2.0 * mc.dim;
  const double psi = double(t.model().layout().total()), B = mc.n_layers * block;
  const double expected = zero == 0 ? 0.5 : (0.5 * B + (psi - B)) / psi;
  const bool ok = std::fabs(sent_across / flat - expected) < 0.05;
  std::printf("rank %d zero=%d dim=%d: %.0f B per step to other nodes, %.3f of the flat algorithm's %.0f (expected %.3f): %s\n",
              world.rank(), zero, dim, sent_across / steps, sent_across / flat, flat / steps, expected, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (argc != 3 && argc != 4) return std::fprintf(stderr, "usage: dp_equivalence ZERO ACCUM [DIM]\n"), 2;
  const int zero = std::atoi(argv[1]), accum = std::atoi(argv[2]), n = world.size(), dim = argc == 4 ? std::atoi(argv[3]) : 0;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const Mesh mesh(world, MeshDegrees{.dp = n});
  int failures = 0;

  auto before = MemoryLedger::instance().snapshot();
  Trainer parallel(tiny(data, 4, accum, n, zero, dim), testkit::temp_dir("dp"), &mesh);
  parallel.quiet = true;
  auto after = MemoryLedger::instance().snapshot();
  // Model-state bytes this rank holds, against the formula (10% slack for the uneven chunks).
  const double psi = double(parallel.model().layout().total());
  double state_bytes = 0;
  for (MemCategory c : {MemCategory::params, MemCategory::grads, MemCategory::optimizer})
    state_bytes += double(after.current[int(c)] - before.current[int(c)]);
  const double predicted = zero_formula_bytes(zero, psi, n);
  if (std::fabs(state_bytes - predicted) > 0.10 * predicted) {
    std::printf("rank %d: model-state bytes %.0f, ZeRO-%d formula %.0f (N=%d, psi=%.0f)\n", world.rank(),
                state_bytes, zero, predicted, n, psi);
    ++failures;
  }
  parallel.run();
  const std::vector<float> parallel_weights = parallel.full_params();
  const double parallel_val = parallel.evaluate();  // collective: every rank takes part

  if (world.rank() == 0) {
    // Validation splits each evaluation batch over the ranks like a training batch.
    const testkit::SerialComparison s =
        testkit::compare_with_serial(parallel, parallel_weights, parallel_val, tiny(data, 4 * n, accum, 1, 0, dim));
    const bool ok = s.ok();
    std::printf("dp=%d zero=%d accum=%d: worst step-loss rel diff %.2e (tol 1e-5), worst grad-norm rel "
                "diff %.2e (tol 1e-5), worst weight diff %.2e (tol 1e-4), val loss rel diff %.2e, model-state bytes %.0f vs formula %.0f: %s\n",
                n, zero, accum, s.worst_loss, s.worst_grad_norm, s.worst_weight, s.val_diff, state_bytes, predicted, ok ? "ok" : "FAIL");
    failures += !ok;
  }
  // The byte formulas below are the tiny model's; a wider one is here for the algorithms it takes.
  if (dim == 0) failures += check_comm_volume(mesh, data, zero, accum, dim);
  else failures += check_node_first(mesh, data, zero, accum, dim);
  world.all_reduce(&failures, 1);
  if (world.rank() == 0) std::printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
