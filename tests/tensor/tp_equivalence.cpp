// Tensor parallelism (with sequence parallelism, data parallelism and ZeRO) against the serial
// spec, run under mpirun with TP x DP ranks:
//   tp_equivalence TP SP DP ZERO
// Every rank trains `tiny` (grouped-query attention: 4 query heads over 2 kv heads, so tp = 4
// replicates each kv head on two ranks) for 20 steps; rank 0 then trains the serial model on the
// same global batch in-process. Checked:
//   - per-step losses within 1e-5 relative, final weights within 1e-4, validation loss 1e-5;
//   - activation bytes per rank (the memory ledger) equal the per-layer formula below, for the
//     parallel run and for the serial run beside it, and tp + sp keeps at most 0.55x of serial;
//   - bytes through the tensor-parallel group per step (Comm's counters) equal the formula.
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

TrainConfig tiny(const std::string& data, int micro_batch, int tp, bool sp, int dp, int zero) {
  TrainConfig c = testkit::tiny_config(data);
  c.micro_batch = micro_batch;
  c.tp = tp, c.sp = sp, c.dp = dp, c.zero = zero;
  return c;
}

// Activation bytes one rank keeps for a micro-batch of N tokens (recompute none), written from
// what each layer stores (Korthikanti et al. 2022's accounting, in fp32 and without an s x s
// attention term, which flash attention never stores):
//   residual-stream tensors x_in, ln1, mid, ln2 (4C) and the two rstd (2): whole without sp,
//     1/t of the rows with sp;
//   the column-parallel outputs: q, k, v (this rank's H/t query heads and max(1, Hkv/t) kv
//     heads), the attention output (H/t heads), the softmax statistics lse (H/t), and gate, up,
//     swiglu(gate, up) (3F/t);
//   after the last block: its output, the final norm's output and rstd (2C + 1), like the
//     residual stream.
double activation_formula_bytes(const ModelConfig& c, int t, bool sp, double N) {
  const double D = c.head_dim(), H = double(c.n_heads) / t,
               Hkv = c.n_kv_heads >= t ? double(c.n_kv_heads) / t : 1.0;
  const double resid = sp ? N / t : N;
  const double per_layer = resid * (4.0 * c.dim + 2) + N * ((H + 2 * Hkv) * D + H * D + H + 3.0 * c.ffn_dim / t);
  return 4 * (c.n_layers * per_layer + resid * (2.0 * c.dim + 1));
}

struct TpBytes {
  double all_reduce, all_gather, reduce_scatter;
};
// Bytes this rank contributes to the tp group per optimizer step (Comm's counting: an
// all-reduce or reduce-scatter counts its whole input, an all-gather this rank's chunk), one
// micro-batch, recompute none. X = N*C*4, the bytes of one (N, C) activation.
//   without sp, per layer: forward all-reduces after o and down, backward all-reduces before q/k/v
//     and gate/up (copy_to_tp's dual): 4 X; plus the embedding's forward all-reduce and the LM
//     head input's backward all-reduce: 2 X.
//   with sp, each all-reduce becomes reduce-scatter + all-gather (the same volume): per layer
//     forward 2 all-gathers + 2 reduce-scatters, backward 2 all-gathers (the row outputs' dual)
//     + 2 reduce-scatters (the column inputs' dual) + 2 all-gathers of the stored norm shards
//     for the weight gradients (Megatron re-gathers them too rather than keep them whole); plus
//     embedding (RS forward, AG backward) and head (AG forward, RS backward).
//   always: the vocab-parallel loss reduces 3 floats per token (max, sum, target logit), and the
//     gradient norm one double; with sp the norm weights' partial gradients (2L + 1 vectors of C).
TpBytes tp_formula_bytes(const ModelConfig& c, int t, bool sp, double N) {
  const double X = N * c.dim * 4, L = c.n_layers, chunk = X / t;
  TpBytes b{3 * N * 4 + 8, 0, 0};
  if (!sp) {
    b.all_reduce += (4 * L + 2) * X;
  } else {
    b.all_gather = (6 * L + 2) * chunk;
    b.reduce_scatter = (4 * L + 2) * X;
    b.all_reduce += (2 * L + 1) * c.dim * 4;
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (argc != 5) return std::fprintf(stderr, "usage: tp_equivalence TP SP DP ZERO\n"), 2;
  const int tp = std::atoi(argv[1]), dp = std::atoi(argv[3]), zero = std::atoi(argv[4]);
  const bool sp = std::atoi(argv[2]) != 0;
  const Mesh mesh(world, MeshDegrees{.dp = dp, .tp = tp});
  const Comm& tp_group = mesh.group(MeshGroup::tp);
  const std::string data = testkit::shared_tiny_data_dir(world);
  const int mb = 4;
  int failures = 0;

  using testkit::activation_bytes;
  const double before = activation_bytes();
  Trainer parallel(tiny(data, mb, tp, sp, dp, zero), testkit::temp_dir("tp"), &mesh);
  parallel.quiet = true;
  const double acts = activation_bytes() - before;
  const ModelConfig& model = parallel.config().model;
  const double N = double(mb) * model.seq_len;
  const double acts_formula = activation_formula_bytes(model, tp, sp, N);
  if (acts != acts_formula) {
    std::printf("rank %d: activation bytes %.0f, formula %.0f\n", world.rank(), acts, acts_formula);
    ++failures;
  }

  // Communication through the tp group for three steps (the gradient norm's double goes through
  // the trainer's scalar reduction over the tp axis: the same ranks, so the same communicator).
  const Comm& tp_scalars = mesh.group({MeshAxis::tp});
  testkit::reset_comm_stats({&tp_group, &tp_scalars});
  const int steps = 3;
  for (int i = 0; i < steps; ++i) parallel.train_step();
  auto per_step = [&](CommOpKind k) { return testkit::comm_bytes_per_step({&tp_group, &tp_scalars}, k, steps); };
  const TpBytes want = tp_formula_bytes(model, tp, sp, N);
  const TpBytes got{per_step(CommOpKind::all_reduce), per_step(CommOpKind::all_gather),
                    per_step(CommOpKind::reduce_scatter)};
  if (got.all_reduce != want.all_reduce || got.all_gather != want.all_gather || got.reduce_scatter != want.reduce_scatter) {
    std::printf("rank %d: tp bytes per step all-reduce %.0f / %.0f, all-gather %.0f / %.0f, reduce-scatter %.0f / %.0f "
                "(counted / formula)\n", world.rank(), got.all_reduce, want.all_reduce, got.all_gather, want.all_gather,
                got.reduce_scatter, want.reduce_scatter);
    ++failures;
  }

  // A fresh run of 20 steps against the serial run.
  Trainer fresh(tiny(data, mb, tp, sp, dp, zero), testkit::temp_dir("tp"), &mesh);
  fresh.quiet = true;
  fresh.run();
  const std::vector<float> parallel_weights = fresh.full_params();
  const double parallel_val = fresh.evaluate();

  if (world.rank() == 0) {
    const testkit::SerialComparison s =
        testkit::compare_with_serial(fresh, parallel_weights, parallel_val, tiny(data, mb * dp, 1, false, 1, 0));
    const double serial_acts = s.serial_activation_bytes;
    const double serial_formula = activation_formula_bytes(model, 1, false, N * dp);
    // Per rank, per token of its micro-batch: the parallel rank against the serial one.
    const double ratio = (acts / N) / (serial_acts / (N * dp));
    const bool ok = s.ok() && serial_acts == serial_formula && (!sp || ratio <= 0.55);
    std::printf("tp=%d sp=%d dp=%d zero=%d: worst step-loss rel diff %.2e (tol 1e-5), worst grad-norm rel diff %.2e "
                "(tol 1e-5), worst weight diff %.2e (tol 1e-4), val loss rel diff %.2e; activation bytes per token %.0f vs serial %.0f (%.3fx; formulas %.0f, %.0f); "
                "tp bytes per step: all-reduce %.0f, all-gather %.0f, reduce-scatter %.0f: %s\n",
                tp, sp, dp, zero, s.worst_loss, s.worst_grad_norm, s.worst_weight, s.val_diff, acts / N, serial_acts / (N * dp), ratio,
                acts_formula / N, serial_formula / (N * dp), got.all_reduce, got.all_gather, got.reduce_scatter,
                ok ? "ok" : "FAIL");
    failures += !ok;
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
