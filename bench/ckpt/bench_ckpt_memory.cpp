// One training run under mpirun (a ZeRO-3 data-parallel mesh over every rank) that either starts
// fresh or resumes from RUN's latest checkpoint, trains to STEPS and saves; then every rank
// reports the ledger's peak beside the kernel's peak resident set (VmHWM), which counts every
// byte the ledger does not see. Rank 0 prints one line per rank:
//   rank R ledger_peak_bytes L vmhwm_bytes H step S
// Usage: bench_ckpt_memory CONFIG DATA RUN STEPS [key=value ...]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "core/memory.h"
#include "train/trainer.h"

using namespace ff;

namespace {
double vmhwm_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) * 1024.0;  // kB
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  if (argc < 5)
    return std::fprintf(stderr, "usage: bench_ckpt_memory CONFIG DATA RUN STEPS [key=value ...]\n"), 2;
  std::vector<std::pair<std::string, std::string>> overrides = {
      {"data", argv[2]}, {"steps", argv[4]}, {"threads", "1"}, {"eval_every", "0"}, {"zero", "3"}};
  for (int i = 5; i < argc; ++i) {
    const std::string kv = argv[i];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos)
      return std::fprintf(stderr, "bad override '%s' (want key=value)\n", argv[i]), 2;
    overrides.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  TrainConfig cfg = load_train_config(argv[1], overrides);
  cfg.dp = world.size();
  const Mesh mesh(world, MeshDegrees{.dp = world.size()});
  int step = 0;
  {
    Trainer t(cfg, argv[3], &mesh);
    t.quiet = true;
    t.run();
    step = t.step();
  }
  std::vector<double> mine = {double(MemoryLedger::instance().snapshot().total_peak), vmhwm_bytes()};
  std::vector<double> all(2 * size_t(world.size()));
  world.all_gather(mine.data(), all.data(), all.size());
  if (world.rank() == 0)
    for (int r = 0; r < world.size(); ++r)
      std::printf("rank %d ledger_peak_bytes %.0f vmhwm_bytes %.0f step %d\n", r, all[2 * r], all[2 * r + 1],
                  step);
  return 0;
}
