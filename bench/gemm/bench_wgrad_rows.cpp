// The bf16 weight-gradient products dW += dy^T x of the `bench` model (configs/bench.toml: 8 x 256
// tokens; qkv, o, gate_up, down per layer, lm_head once) run two ways, alternately in one run on
// random operands: one oneDNN matmul over all threads (the path before kernels/wgrad_rows.h) and
// dW's rows dealt out to the threads, one single-threaded matmul each. Prints GFLOP/s per shape
// (best of the rounds) and the milliseconds a step spends in them (6 layers + the head).
// Usage: bench_wgrad_rows [threads] [rounds]
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "best_seconds.h"
#include "kernels/convert.h"
#include "kernels/gemm.h"
#include "kernels/wgrad_rows.h"

namespace {

struct Operands {
  std::vector<uint16_t> dy, x;  // bf16 (tokens, out) and (tokens, in)
  std::vector<float> dW;        // (out, in)
};

Operands random_operands(int tokens, int in, int out) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> dy(size_t(tokens) * out), x(size_t(tokens) * in);
  for (float& v : dy) v = u(rng);
  for (float& v : x) v = u(rng);
  Operands o{std::vector<uint16_t>(dy.size()), std::vector<uint16_t>(x.size()), std::vector<float>(size_t(out) * in)};
  ff::convert_from_f32(ff::TypedPtr(o.dy.data(), ff::DType::bf16), dy.data(), dy.size());
  ff::convert_from_f32(ff::TypedPtr(o.x.data(), ff::DType::bf16), x.data(), x.size());
  return o;
}

// Seconds of one dW += dy^T x, best of the calls that fit in ~0.15 s.
double product_seconds(Operands& o, int tokens, int in, int out, bool rows) {
  const ff::ConstTypedPtr dy(o.dy.data(), ff::DType::bf16), x(o.x.data(), ff::DType::bf16);
  auto run = [&] {
    if (!rows || !ff::wgrad_rows_per_thread(out, in, tokens, dy, out, x, in, 1.0f, o.dW.data(), in))
      ff::gemm(true, false, out, in, tokens, 1.0f, dy, out, x, in, 1.0f, ff::TypedPtr(o.dW.data()), in);
  };
  return ffbench::best_seconds(run, 0.15, 100);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2, rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  omp_set_num_threads(threads);
  const int tokens = 8 * 256;
  struct Shape {
    const char* name;
    int in, out, per_step;
  };
  const Shape shapes[] = {{"qkv", 384, 1152, 6}, {"o", 384, 384, 6}, {"gate_up", 384, 2048, 6},
                          {"down", 1024, 384, 6}, {"lm_head", 384, 4096, 1}};
  std::printf("| dW = dy^T x | out x in, K = %d | one matmul, %d threads: GFLOP/s | rows per thread: GFLOP/s | "
              "speed-up |\n|---|---|---|---|---|\n", tokens, threads);
  double step_plain = 0, step_rows = 0;
  for (const Shape& s : shapes) {
    Operands o = random_operands(tokens, s.in, s.out);
    double plain = 1e30, rows = 1e30;
    for (int r = 0; r < rounds; ++r) {  // alternating rounds, best of each
      plain = std::min(plain, product_seconds(o, tokens, s.in, s.out, false));
      rows = std::min(rows, product_seconds(o, tokens, s.in, s.out, true));
    }
    const double gflop = 2.0 * tokens * double(s.in) * s.out * 1e-9;
    std::printf("| %s | %d x %d | %.0f | %.0f | %.2fx |\n", s.name, s.out, s.in, gflop / plain, gflop / rows,
                plain / rows);
    step_plain += s.per_step * plain, step_rows += s.per_step * rows;
  }
  std::printf("| per step (6 layers + head) | | %.1f ms | %.1f ms | %.2fx |\n", step_plain * 1e3, step_rows * 1e3,
              step_plain / step_rows);
  return 0;
}
