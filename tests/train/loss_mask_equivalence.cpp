// Completion-only loss under a parallel layout against the serial run, under mpirun with 2 ranks:
//   loss_mask_equivalence LAYOUT      (LAYOUT: dp | pp | tp | cp | ep)
// Both train `tiny` for 20 steps on data whose loss mask leaves out a different fraction of every
// row (tests/support: tiny_masked_data_dir), with the same global batch of 8 sequences; rank 0
// then trains the serial run in-process and compares per-step losses and gradient norms (1e-5
// relative), final weights (1e-4) and the validation loss (1e-5). The loss is the mean over the
// loss targets of the whole global batch, so a rank or micro-batch dividing by its own count, or
// by its own token count, moves the numbers. The test first checks that the data makes that
// visible: the loss targets per rank (dp) or per micro-batch differ within a step. ep trains a
// mixture of experts (4 experts, top-2) over dp 2 = ep 2, whose balancing losses stay a mean over
// every token while the token losses average over the targets.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "io/tokens/data_loader.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_stream.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

constexpr int kGlobalBatch = 8;

// Whether, in some step of the run, the groups of `group_rows` consecutive rows of the global
// batch hold different numbers of loss targets, and the batch fewer targets than tokens.
bool targets_differ_between_groups(const TrainConfig& c, int group_rows) {
  const std::string path = testkit::only_shard(c.data, "train");
  const TokenShardInfo info = read_token_shard_info(path);
  DataLoader loader(open_token_shards({path}, TokenShardExpect{int(info.vocab_size), 0, "the test"}),
                    c.model.seq_len, c.seed);
  const size_t T = size_t(c.model.seq_len);
  std::vector<int32_t> in(kGlobalBatch * T), tgt(kGlobalBatch * T);
  bool differ = false, masked = false;
  for (int step = 0; step < c.steps; ++step) {
    const uint64_t total = loader.next_batch(kGlobalBatch, 0, kGlobalBatch, in.data(), tgt.data());
    masked |= total < kGlobalBatch * T;
    std::vector<int> per_group(size_t(kGlobalBatch / group_rows), 0);
    for (size_t i = 0; i < tgt.size(); ++i) per_group[i / (T * size_t(group_rows))] += tgt[i] != -1;
    for (int n : per_group) differ |= n != per_group[0];
    if (step == 0) {
      std::printf("step 1: %llu loss targets of %zu; per group of %d rows:", (unsigned long long)total,
                  kGlobalBatch * T, group_rows);
      for (int n : per_group) std::printf(" %d", n);
      std::printf("\n");
    }
  }
  return differ && masked;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  const std::string layout = argc == 2 ? argv[1] : "";
  if (world.size() != 2 || (layout != "dp" && layout != "pp" && layout != "tp" && layout != "cp" && layout != "ep"))
    return std::fprintf(stderr, "usage: mpirun -np 2 loss_mask_equivalence dp|pp|tp|cp|ep\n"), 2;
  const std::string data = testkit::shared_masked_data_dir(world);

  // The serial run: the global batch of 8 as 4 micro-batches of 2 (pp needs several in flight).
  TrainConfig serial = testkit::tiny_config(data);
  serial.micro_batch = 2, serial.grad_accum = kGlobalBatch / 2;
  if (layout == "pp") serial.model.n_layers = 4;  // a block on each stage
  if (layout == "ep") serial.model.moe.n_experts = 4, serial.model.moe.top_k = 2;
  TrainConfig c = serial;
  MeshDegrees degrees;
  if (layout == "dp" || layout == "ep") c.dp = degrees.dp = 2, c.zero = 1, c.grad_accum /= 2;
  if (layout == "ep") c.ep = degrees.ep = 2;
  if (layout == "pp") c.pp = degrees.pp = 2, c.schedule = PipeSchedule::one_f_one_b;
  if (layout == "tp") c.tp = degrees.tp = 2, c.sp = true;
  if (layout == "cp") c.cp = degrees.cp = 2;
  const Mesh mesh(world, degrees);
  // An evaluation batch is micro_batch x dp windows: the serial run reads the same windows in
  // dp times as many batches.
  serial.eval_batches = c.eval_batches * degrees.dp;

  int failures = 0;
  // dp: each rank's rows; the others: each micro-batch's.
  const int group_rows = degrees.dp > 1 ? c.micro_batch * c.grad_accum : c.micro_batch;
  if (world.rank() == 0 && !targets_differ_between_groups(c, group_rows)) {
    std::printf("the masked data gives every group of %d rows the same loss targets: the test would not see a "
                "per-rank or per-micro-batch normalisation\n", group_rows);
    ++failures;
  }

  Trainer parallel(c, testkit::temp_dir("mask"), &mesh);
  parallel.quiet = true;
  parallel.run();
  const std::vector<float> parallel_weights = parallel.full_params();
  const double parallel_val = parallel.evaluate();
  if (world.rank() == 0) {
    const testkit::SerialComparison s = testkit::compare_with_serial(parallel, parallel_weights, parallel_val, serial);
    std::printf("masked data, %s 2 vs serial: worst step-loss rel diff %.2e (tol 1e-5), worst grad-norm rel diff "
                "%.2e (tol 1e-5), worst weight diff %.2e (tol 1e-4), val loss rel diff %.2e: %s\n",
                layout.c_str(), s.worst_loss, s.worst_grad_norm, s.worst_weight, s.val_diff, s.ok() ? "ok" : "FAIL");
    failures += !s.ok();
  }
  world.all_reduce(&failures, 1);
  return failures == 0 ? 0 : 1;
}
