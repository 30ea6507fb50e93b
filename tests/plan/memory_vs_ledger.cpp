// The planner's per-rank memory prediction against the MemoryLedger's measured peaks, run under
// mpirun with one layout per process (the kernels' per-thread scratch outlives a trainer):
//   memory_vs_ledger LAYOUT      e.g. "tp=2,sp,mb=4", "pp=2,zb-h1,m=4", "cp=2,cp_comm=a2a",
//                                "ep=2,mb=2" (tiny with 4 experts, top 2), "precision=bf16"
// Every rank trains `tiny` for two steps in that layout, then compares the ledger's peak of each
// category with estimate_rank_memory for its own pipeline rank: model states (params, grads,
// optimizer) and activations within 1% (they differ only by the shard chunks of dp ranks > 0),
// workspace within 1% too, or 10% with pipeline stages (the executor's boundary buffers are
// approximated).
#include <cmath>
#include <cstdio>
#include <string>

#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "plan/memory_model.h"
#include "shared_data.h"
#include "train_fixtures.h"

using namespace ff;

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (argc != 2) return std::fprintf(stderr, "usage: memory_vs_ledger LAYOUT\n"), 2;
  const std::string data = testkit::shared_tiny_data_dir(world);
  LayoutSpec L = parse_layout(argv[1]);
  L.dp = world.size() / (L.tp * L.pp * L.cp);
  TrainConfig c = testkit::tiny_config(data);
  c.dp = L.dp, c.tp = L.tp, c.pp = L.pp, c.sp = L.sp, c.zero = L.zero, c.recompute = L.recompute;
  c.micro_batch = L.micro_batch, c.grad_accum = L.grad_accum, c.schedule = L.schedule, c.chunks = L.chunks;
  c.cp = L.cp, c.cp_comm = L.cp_comm, c.ep = L.ep, c.precision = L.gemm, c.dp_mode = L.dp_mode;
  if (L.ep > 1) c.model.moe.n_experts = 4, c.model.moe.top_k = 2, c.model.moe.expert_ffn_dim = 48;
  const Mesh mesh(world, MeshDegrees{.dp = L.dp, .cp = L.cp, .tp = L.tp, .pp = L.pp, .ep = L.ep});
  int failures = 0;
  {
    Trainer t(c, testkit::temp_dir("plan_mem"), &mesh);
    t.quiet = true;
    for (int i = 0; i < 2; ++i) t.train_step();
    const MemorySnapshot got = MemoryLedger::instance().snapshot();
    const RankMemory want =
        estimate_rank_memory(t.config().model, L, mesh.rank(MeshGroup::pp), this_engine_host(c.threads));
    std::string line = "rank " + std::to_string(world.rank()) + " " + L.str() + ":";
    for (int i = 0; i < kMemCategories; ++i) {
      const double measured = double(got.peak[i]), predicted = double(want.bytes[size_t(i)]);
      const double tol = MemCategory(i) == MemCategory::workspace && L.pp > 1 ? 0.10 : 0.01;
      const bool ok = std::fabs(measured - predicted) <= tol * std::max(predicted, 1.0);
      failures += !ok;
      line += " " + std::string(mem_category_name(MemCategory(i))) + " " + std::to_string(int64_t(measured)) +
              (ok ? " ~ " : " != ") + std::to_string(int64_t(predicted));
    }
    std::printf("%s\n", line.c_str());
  }
  world.all_reduce(&failures, 1);
  if (world.rank() == 0) std::printf("%s\n", failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
