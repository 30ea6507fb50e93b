#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/scratch.h"
#include "kernels/simd.h"

#if defined(FIVEFOLD_GEMM_ONEDNN)
#include <dnnl.h>
#elif defined(FIVEFOLD_GEMM_OPENBLAS)
#include <cblas.h>
#else
#error "define FIVEFOLD_GEMM_ONEDNN or FIVEFOLD_GEMM_OPENBLAS (CMake option FIVEFOLD_GEMM)"
#endif

namespace ff {

// Both backends are asked for row-major products directly. Inside an OpenMP parallel region
// each runs on the calling thread: oneDNN (OpenMP runtime) and OpenBLAS's OpenMP build check
// omp_in_parallel(); the OpenBLAS pthreads build does not, see bench/RESULTS.md.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
#if defined(FIVEFOLD_GEMM_ONEDNN)
  const dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A,
                                      lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) {
    throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(st) +
                             " (M=" + std::to_string(M) + " N=" + std::to_string(N) +
                             " K=" + std::to_string(K) + ")");
  }
#else
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void linear_forward(float* y, const float* x, const float* W, int N, int in, int out,
                    bool accumulate) {
  gemm(false, true, N, out, in, 1.0f, x, in, W, in, accumulate ? 1.0f : 0.0f, y, out);
}

#if defined(FIVEFOLD_GEMM_ONEDNN)
namespace {

// dst (rows x cols) += src^T, src stored (cols x rows) with row stride ld_src.
void add_transposed(float* dst, int rows, int cols, const float* src, int ld_src) {
  constexpr int kB = simd::kLanes;
#pragma omp parallel for schedule(static)
  for (int r0 = 0; r0 < rows; r0 += kB) {
    float block[kB * kB];
    const int nr = std::min(kB, rows - r0);
    for (int c0 = 0; c0 < cols; c0 += kB) {
      const int nc = std::min(kB, cols - c0);
      const float* s = src + static_cast<size_t>(c0) * ld_src + r0;
      if (nr == kB && nc == kB) {
        simd::transpose16(s, ld_src, block, kB);
      } else {
        for (int r = 0; r < nr; ++r)
          for (int c = 0; c < nc; ++c) block[r * kB + c] = s[static_cast<size_t>(c) * ld_src + r];
      }
      for (int r = 0; r < nr; ++r) {
        float* d = dst + static_cast<size_t>(r0 + r) * cols + c0;
        for (int c = 0; c < nc; ++c) d[c] += block[r * kB + c];
      }
    }
  }
}

}  // namespace
#endif

void linear_backward(float* dx, float* dW, const float* dy, const float* x, const float* W, int N,
                     int in, int out) {
  if (dx) gemm(false, false, N, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in);
  if (!dW) return;
#if defined(FIVEFOLD_GEMM_ONEDNN)
  // oneDNN 2.6 runs dy^T x at ~2/3 speed when out is several times in (gate_up, lm_head: 210
  // vs 300 GFLOP/s on 2 threads), but the swapped product x^T dy at full speed; adding its
  // transpose costs a few percent. bench/RESULTS.md has the measurement.
  if (out >= 4 * in) {
    float* dWt = detail::thread_scratch<float>(static_cast<size_t>(in) * out);  // (in, out)
    gemm(true, false, in, out, N, 1.0f, x, in, dy, out, 0.0f, dWt, out);
    add_transposed(dW, out, in, dWt, out);
    return;
  }
#endif
  gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dW, in);
}

const char* gemm_backend_name() {
#if defined(FIVEFOLD_GEMM_ONEDNN)
  return "onednn";
#else
  return "openblas";
#endif
}

double measure_sgemm_gflops(int n, int threads) {
  const int saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
#if defined(FIVEFOLD_GEMM_OPENBLAS)
  openblas_set_num_threads(threads > 0 ? threads : saved);
#endif
  const size_t nn = static_cast<size_t>(n) * n;
  // Values of order 1 with no denormals, so timing is not skewed by slow paths.
  std::vector<float> a(nn), b(nn), c(nn, 0.0f);
  for (size_t i = 0; i < nn; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    b[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  }
  using clock = std::chrono::steady_clock;
  gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  // Best of as many products as fit in ~0.4 s (at least 3): single runs of a 2048^3 product
  // spread by 10% on a shared machine, and MFU divides by this number.
  double best = 1e30, spent = 0;
  for (int rep = 0; rep < 3 || (spent < 0.4 && rep < 50); ++rep) {
    const auto t0 = clock::now();
    gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    const double t = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, t);
    spent += t;
  }
  if (threads > 0) omp_set_num_threads(saved);
#if defined(FIVEFOLD_GEMM_OPENBLAS)
  openblas_set_num_threads(saved);
#endif
  return 2.0 * n * static_cast<double>(n) * n / best * 1e-9;
}

}  // namespace ff
