// fivefold's tile GEMM (kernels/gemm_amx.h) against oneDNN's bf16 GEMM at the `bench` model's
// shapes (bench_model_products.h), GFLOP/s each, alternating
// rounds, best of each; with the tile unit's own peak (kernels/bf16_peak.h: tdpbf16ps on
// registers) so each GEMM reads as a share of it, and the largest difference between the two
// GEMMs' results relative to the largest output (fp32 sums of the same exact products: rounding
// only). Needs a CPU with AMX; elsewhere it says so and stops, unless --emulate runs the tile GEMM
// on the scalar model (the bench's own check: slow, tiny).
// Usage: bench_gemm_amx [threads] [--emulate]
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_model_products.h"
#include "best_seconds.h"
#include "kernels/bf16_peak.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "kernels/gemm_amx.h"

using ffbench::best_seconds;

int main(int argc, char** argv) {
  int threads = 0;
  bool emulate = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--emulate") == 0) emulate = true;
    else threads = std::atoi(argv[i]);
  }
  if (threads > 0) omp_set_num_threads(threads);
  // The oneDNN column is oneDNN's own: the typed gemm must not take fivefold's tile GEMM, its
  // default on an AMX CPU (read once, at the first bf16 product, so set before any).
  setenv("FIVEFOLD_AMX_GEMM", "off", 1);
  const bool amx = ff::attention_tiles() == ff::AttentionTiles::amx;  // the tile state granted
  if (!amx && !emulate) {
    std::printf("no AMX for fivefold's kernels on this CPU (%s): nothing to measure (--emulate checks the bench)\n",
                ff::attention_tiles_name(ff::attention_tiles()));
    return 0;
  }
  if (ff::gemm_on_fivefold_tiles(ff::DType::bf16)) {
    std::printf("the typed bf16 GEMM runs on the tile GEMM: the oneDNN column would not be oneDNN's\n");
    return 2;
  }
  const ff::GemmTiles how = amx && !emulate ? ff::GemmTiles::amx : ff::GemmTiles::amx_emulated;
  std::printf("%s; threads %d; tile GEMM on %s\n", ff::bf16_path_description().c_str(), omp_get_max_threads(),
              ff::gemm_tiles_name(how));
  // The tile unit's peak (kernels/bf16_peak.h: one core, operands in the registers) on every thread.
  const double peak = amx && !emulate ? ff::measure_amx_bf16_peak() * omp_get_max_threads() * 1e-9 : 0;
  if (peak > 0)
    std::printf("tile unit peak (tdpbf16ps on registers, %d cores): %.0f GFLOP/s\n", omp_get_max_threads(), peak);
  // --emulate: the same products scaled down.
  const auto shapes = emulate ? ffbench::bench_model_products(64, 48) : ffbench::bench_model_products();
  std::printf("| shape | M | N | K | oneDNN bf16 GFLOP/s | fivefold tiles GFLOP/s | tiles / oneDNN | tiles, %% of peak "
              "| max diff / max output |\n|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  double sum_onednn = 0, sum_tiles = 0;
  for (const ffbench::Product& s : shapes) {
    const int lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N;
    std::vector<float> a(size_t(s.M) * s.K), b(size_t(s.K) * s.N);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    ff::convert_from_f32(ff::TypedPtr(a16.data(), ff::DType::bf16), a.data(), a.size());
    ff::convert_from_f32(ff::TypedPtr(b16.data(), ff::DType::bf16), b.data(), b.size());
    std::vector<float> c_onednn(size_t(s.M) * s.N), c_tiles(c_onednn.size());
    auto onednn = [&] {
      ff::gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, ff::ConstTypedPtr(a16.data(), ff::DType::bf16), lda,
               ff::ConstTypedPtr(b16.data(), ff::DType::bf16), ldb, 0.0f, ff::TypedPtr(c_onednn.data()), s.N);
    };
    auto tiles = [&] {
      ff::gemm_bf16_on_tiles(how, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, a16.data(), lda, b16.data(), ldb, 0.0f,
                             c_tiles.data(), s.N);
    };
    double t_onednn = 1e30, t_tiles = 1e30;
    for (int round = 0; round < 2; ++round)  // alternating; best of each
      t_onednn = std::min(t_onednn, best_seconds(onednn)), t_tiles = std::min(t_tiles, best_seconds(tiles));
    double diff = 0, big = 0;
    for (size_t i = 0; i < c_tiles.size(); ++i) {
      diff = std::max(diff, double(std::abs(c_tiles[i] - c_onednn[i])));
      big = std::max(big, double(std::abs(c_onednn[i])));
    }
    const double flops = 2.0 * s.M * double(s.N) * s.K;
    sum_onednn += t_onednn, sum_tiles += t_tiles;
    std::printf("| %s | %d | %d | %d | %.0f | %.0f | %.2fx | %s | %.1e |\n", s.name.c_str(), s.M, s.N, s.K,
                flops / t_onednn * 1e-9, flops / t_tiles * 1e-9, t_onednn / t_tiles,
                peak > 0 ? (std::to_string(int(std::lround(100 * flops / t_tiles * 1e-9 / peak))) + "%").c_str() : "-",
                diff / std::max(big, 1e-30));
  }
  std::printf("all shapes once each: oneDNN %.2f ms, tiles %.2f ms (%.2fx)\n", sum_onednn * 1e3, sum_tiles * 1e3,
              sum_onednn / sum_tiles);
  return 0;
}
