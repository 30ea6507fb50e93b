#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

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

void linear_backward(float* dx, float* dW, const float* dy, const float* x, const float* W, int N,
                     int in, int out) {
  if (dx) gemm(false, false, N, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in);
  if (dW) gemm(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dW, in);
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
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clock::now();
    gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count());
  }
  if (threads > 0) omp_set_num_threads(saved);
#if defined(FIVEFOLD_GEMM_OPENBLAS)
  openblas_set_num_threads(saved);
#endif
  return 2.0 * n * static_cast<double>(n) * n / best * 1e-9;
}

}  // namespace ff
