// bf16 against fp32 GEMMs at the `bench` model's shapes (configs/bench.toml: N = 8 x 256 tokens,
// C = 384, Q = 1152, F = 1024, V = 4096) and at 2048^3, GFLOP/s each, measured alternately in one
// run. Usage: bench_gemm_bf16 [threads]
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  std::printf("%s\n", ff::bf16_path_description().c_str());
  struct Shape {
    const char* name;
    int M, N, K;
    bool trans_a, trans_b;
  };
  const int tok = 8 * 256;
  const Shape shapes[] = {
      {"qkv fwd x W^T", tok, 1152, 384, false, true},   {"o fwd x W^T", tok, 384, 384, false, true},
      {"gate_up fwd x W^T", tok, 2048, 384, false, true}, {"down fwd x W^T", tok, 384, 1024, false, true},
      {"lm_head fwd x W^T", tok, 4096, 384, false, true}, {"lm_head dx = dy W", tok, 384, 4096, false, false},
      {"gate_up dx = dy W", tok, 384, 2048, false, false}, {"qkv dW = dy^T x", 1152, 384, tok, true, false},
      {"gate_up dW = dy^T x", 2048, 384, tok, true, false}, {"down dW = dy^T x", 384, 1024, tok, true, false},
      {"lm_head dW = dy^T x", 4096, 384, tok, true, false}, {"square 2048^3", 2048, 2048, 2048, false, false},
  };
  std::printf("| shape | M | N | K | fp32 GFLOP/s | bf16 GFLOP/s | bf16/fp32 |\n|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    double f32 = 0, b16 = 0;
    for (int round = 0; round < 2; ++round) {  // alternating; best of each
      f32 = std::max(f32, ff::measure_gemm_gflops(ff::DType::f32, s.M, s.N, s.K, s.trans_a, s.trans_b, threads));
      b16 = std::max(b16, ff::measure_gemm_gflops(ff::DType::bf16, s.M, s.N, s.K, s.trans_a, s.trans_b, threads));
    }
    std::printf("| %s | %d | %d | %d | %.0f | %.0f | %.2fx |\n", s.name, s.M, s.N, s.K, f32, b16, b16 / f32);
  }
  return 0;
}
