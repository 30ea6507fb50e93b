// Context parallelism against the serial spec, under mpirun with CP x TP x DP x PP ranks:
//   cp_equivalence CP COMM BALANCE TP DP ZERO PP
// Every rank trains `tiny` at seq_len 32 (chunks of 8 tokens at cp 2, 4 at cp 4) for 20 steps with each sequence split over the cp group;
// rank 0 then trains the serial model on the same global batch in-process. Checked:
//   - per-step losses and gradient norms within 1e-5 relative, final weights within 1e-4,
//     validation loss 1e-5 (testkit::compare_with_serial);
//   - activation bytes per rank are the serial run's / cp (per sequence, the ledger);
//   - the attention FLOPs the blocks of each cp rank did (ContextAttention's count of what the
//     block kernels return): within 2% of each other with head-tail chunks, and printed with the
//     contiguous split's imbalance (which must show one).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

struct Layout {
  int cp;
  CpComm comm;
  CpBalance balance;
  int tp, dp, zero, pp;
};

TrainConfig tiny(const std::string& data, const Layout& l, int micro_batch) {
  TrainConfig c = testkit::tiny_config(data);
  // The document-mask variant keeps its longer rows (several documents each, crossing chunk edges).
  if (!testkit::doc_mask_variant()) c.model.seq_len = 32;
  c.micro_batch = micro_batch;
  c.cp = l.cp, c.cp_comm = l.comm, c.cp_balance = l.balance;
  c.tp = l.tp, c.dp = l.dp, c.zero = l.zero, c.pp = l.pp;
  if (l.pp > 1) c.grad_accum = 2, c.schedule = PipeSchedule::one_f_one_b;
  // a2a spreads the kv heads over the cp ranks: at cp 4 tiny's 2 kv heads become 4 (plain
  // multi-head attention), in the serial run it is compared with too.
  if (l.comm == CpComm::a2a && c.model.n_kv_heads % l.cp != 0) c.model.n_kv_heads = c.model.n_heads;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (argc != 8) return std::fprintf(stderr, "usage: cp_equivalence CP COMM BALANCE TP DP ZERO PP\n"), 2;
  const Layout l{std::atoi(argv[1]), cp_comm_names().parse(argv[2], "COMM"), cp_balance_names().parse(argv[3], "BALANCE"),
                 std::atoi(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]), std::atoi(argv[7])};
  const Mesh mesh(world, MeshDegrees{.dp = l.dp, .cp = l.cp, .tp = l.tp, .pp = l.pp});
  const std::string data = testkit::shared_tiny_data_dir(world);
  const int mb = 2;
  int failures = 0;

  const double before = testkit::activation_bytes();
  Trainer run(tiny(data, l, mb), testkit::temp_dir("cp"), &mesh);
  run.quiet = true;
  const double acts = testkit::activation_bytes() - before;
  ContextAttention& attention = run.context()->attention();
  attention.reset_block_flops();
  run.run();
  const double flops = attention.block_flops();
  const std::vector<float> weights = run.full_params();
  const double val = run.evaluate();

  // Attention work per cp rank (the FLOPs its block kernels returned), gathered over the cp group.
  const Comm& cp_group = mesh.group(MeshGroup::cp);
  std::vector<double> per_rank(size_t(l.cp));
  cp_group.all_gather(&flops, per_rank.data(), per_rank.size());
  const auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
  const double imbalance = *lo > 0 ? *hi / *lo - 1 : 0;
  bool balance_ok = true;
  if (l.comm != CpComm::a2a) {  // a2a runs the whole-sequence kernel on a share of the heads instead
    balance_ok = *lo > 0 && (l.balance == CpBalance::headtail ? imbalance <= 0.02 : imbalance > 0.5);
  }

  if (world.rank() == 0) {
    Layout serial{1, l.comm, CpBalance::headtail, 1, 1, 0, 1};
    TrainConfig serial_cfg = tiny(data, serial, mb * l.dp);
    serial_cfg.model.n_kv_heads = run.config().model.n_kv_heads;
    if (l.pp > 1) serial_cfg.grad_accum = 2;
    const testkit::SerialComparison s = testkit::compare_with_serial(run, weights, val, serial_cfg);
    // Per sequence: the cp rank holds T / cp of every activation the serial model holds (tp
    // shares the rest out as tp_equivalence checks; compare like with like by skipping it).
    const double per_seq = acts / mb, serial_per_seq = s.serial_activation_bytes / (mb * l.dp);
    const double ratio = per_seq / serial_per_seq;
    const bool mem_ok = l.tp > 1 || l.pp > 1 || std::fabs(ratio * l.cp - 1) < 1e-9;
    const bool ok = s.ok() && mem_ok && balance_ok;
    std::printf("cp=%d %s %s tp=%d dp=%d zero=%d pp=%d: worst step-loss rel diff %.2e, grad-norm rel diff %.2e "
                "(tol 1e-5), weight diff %.2e (tol 1e-4), val rel diff %.2e; activation bytes per sequence %.0f vs "
                "serial %.0f (%.4fx, want 1/%d); attention GFLOP per cp rank min %.4f max %.4f (imbalance %.1f%%): %s\n",
                l.cp, cp_comm_names().name(l.comm), cp_balance_names().name(l.balance), l.tp, l.dp, l.zero, l.pp, s.worst_loss, s.worst_grad_norm,
                s.worst_weight, s.val_diff, per_seq, serial_per_seq, ratio, l.cp, *lo * 1e-9, *hi * 1e-9,
                100 * imbalance, ok ? "ok" : "FAIL");
    failures += !ok;
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
