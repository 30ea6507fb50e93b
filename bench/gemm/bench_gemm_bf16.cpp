// bf16 against fp32 GEMMs at the `bench` model's shapes (bench_model_products.h) and at 2048^3,
// GFLOP/s each, measured alternately in one run. The products that read a weight (x W^T, dy W)
// also run as a training step runs them: through the step's weight copy, plainly and with the
// copy's packed weights (kernels/packed_weights.h), on random operands (a bf16 GEMM's speed
// depends on its data here: the patterned operands of the first two columns run faster).
// Usage: bench_gemm_bf16 [threads]
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_model_products.h"
#include "best_seconds.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "kernels/gemm_precision.h"
#include "kernels/weight_copy.h"

namespace {

// GFLOP/s of C(M,N) = A op(W), A bf16 (M,K) and W an fp32 weight read through a fresh weight copy:
// (N,K) when trans_w (x W^T), else (K,N) (dy W). Best of repeated calls, packed or plain.
double weight_product_gflops(int M, int N, int K, bool trans_w, bool packed) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(size_t(M) * K), w(size_t(K) * N), c(size_t(M) * N);
  for (float& x : a) x = u(rng);
  for (float& x : w) x = u(rng);
  std::vector<uint16_t> a16(a.size());
  ff::convert_from_f32(ff::TypedPtr(a16.data(), ff::DType::bf16), a.data(), a.size());
  ff::WeightCopy copy({{w.data(), w.size()}}, ff::DType::bf16);
  ff::GemmContext bf16{.input_dtype = ff::DType::bf16, .packed_weights = packed};
  bf16.twins.push_back(&copy);
  const ff::FreshWeightCopy fresh(&copy);
  const ff::ConstTypedPtr A(a16.data(), ff::DType::bf16);
  auto run = [&] {
    ff::gemm_run_precision(bf16, false, trans_w, M, N, K, 1.0f, A, K, w.data(), trans_w ? K : N, 0.0f, c.data(), N,
                           trans_w ? ff::GemmRole::forward : ff::GemmRole::dgrad);
  };
  // The warm-up call packs (once per refresh: a step's first product) and builds the primitive.
  const double best = ffbench::best_seconds(run);
  return 2.0 * M * double(N) * K / best * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  if (threads > 0) omp_set_num_threads(threads);
  std::printf("%s\n", ff::bf16_path_description().c_str());
  std::vector<ffbench::Product> shapes = ffbench::bench_model_products();
  shapes.push_back({"square 2048^3", 2048, 2048, 2048, false, false});

  std::printf(
      "| shape | M | N | K | fp32 GFLOP/s | bf16 GFLOP/s | bf16/fp32 | bf16 step-copy plain, random "
      "| bf16 packed, random | packed/plain |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const ffbench::Product& s : shapes) {
    double f32 = 0, b16 = 0;
    for (int round = 0; round < 2; ++round) {  // alternating; best of each
      f32 = std::max(f32, ff::measure_gemm_gflops(ff::DType::f32, s.M, s.N, s.K, s.trans_a, s.trans_b, threads));
      b16 = std::max(b16, ff::measure_gemm_gflops(ff::DType::bf16, s.M, s.N, s.K, s.trans_a, s.trans_b, threads));
    }
    std::printf("| %s | %d | %d | %d | %.0f | %.0f | %.2fx |", s.name.c_str(), s.M, s.N, s.K, f32, b16, b16 / f32);
    if (s.trans_a || s.name.rfind("square", 0) == 0) {  // a weight gradient, the square: no weight
      std::printf(" - | - | - |\n");
      continue;
    }
    double plain = 0, packed = 0;
    for (int round = 0; round < 2; ++round) {
      plain = std::max(plain, weight_product_gflops(s.M, s.N, s.K, s.trans_b, false));
      packed = std::max(packed, weight_product_gflops(s.M, s.N, s.K, s.trans_b, true));
    }
    std::printf(" %.0f | %.0f | %.2fx |\n", plain, packed, packed / plain);
  }
  return 0;
}
