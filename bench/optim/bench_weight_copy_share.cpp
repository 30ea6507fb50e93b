// What share of a bf16 training step the second pass over the weights costs: after AdamW updates
// the fp32 masters, WeightCopy::refresh rounds every one of them to bf16 again (read 4 bytes, write
// 2 per parameter). Fusing it into AdamW would save that pass but for the 2-byte write.
//   bench_weight_copy_share CONFIG DATA_DIR [ROUNDS] [STEPS]
// Trains CONFIG (precision = bf16) and, alternating round by round, times STEPS training steps one
// by one and STEPS passes of exactly refresh's work (convert_from_f32 over every parameter run the
// state holds, into a buffer of its own). Prints the medians and the share.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/memory.h"
#include "kernels/convert.h"
#include "train/trainer.h"

using namespace ff;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s CONFIG DATA_DIR [ROUNDS] [STEPS]\n", argv[0]), 2;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3, steps = argc > 4 ? std::atoi(argv[4]) : 8;
  TrainConfig c = load_train_config(argv[1], {});
  c.data = argv[2];
  c.precision = Precision::bf16;
  c.steps = 2 + rounds * steps + 1;
  const std::string out = (std::filesystem::temp_directory_path() / "ff_weight_copy_share").string();
  std::filesystem::remove_all(out);
  Trainer t(c, out, nullptr);
  t.quiet = true;
  for (int i = 0; i < 2; ++i) t.train_step();  // warm-up
  const std::vector<StateRun> runs = t.state().checkpoint_runs(false).params;
  size_t total = 0;
  for (const StateRun& r : runs) total += r.count;
  TypedBuffer copy(total, DType::bf16, MemCategory::workspace);
  std::vector<double> step_s, pass_s;
  for (int round = 0; round < rounds; ++round) {
    for (int s = 0; s < steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      t.train_step();
      step_s.push_back(seconds_since(t0));
    }
    for (int s = 0; s < steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      size_t at = 0;
      for (const StateRun& r : runs) convert_from_f32(copy.ptr().at(at), r.data, r.count), at += r.count;
      pass_s.push_back(seconds_since(t0));
    }
  }
  const double step = median(step_s), pass = median(pass_s);
  std::printf("parameters %zu, threads %d: bf16 step %.2f ms (median of %zu), rounding pass %.3f ms (median of %zu): "
              "%.2f%% of the step\n",
              total, c.threads, 1e3 * step, step_s.size(), 1e3 * pass, pass_s.size(), 100.0 * pass / step);
  std::filesystem::remove_all(out);
  return 0;
}
