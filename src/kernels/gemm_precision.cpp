#include "kernels/gemm_precision.h"

#include <atomic>
#include <cstdint>

#include "kernels/convert.h"
#include "kernels/gemm.h"
#include "kernels/scratch.h"

namespace ff {
namespace {
// Atomic because OpenMP workers may read it while a test's scope restores it on the main thread.
std::atomic<DType> g_input_dtype{DType::f32};
}  // namespace

void set_gemm_input_dtype(DType t) { g_input_dtype.store(t, std::memory_order_relaxed); }
DType gemm_input_dtype() { return g_input_dtype.load(std::memory_order_relaxed); }

void gemm_run_precision(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                        const float* B, int ldb, float beta, float* C, int ldc) {
  const DType t = gemm_input_dtype();
  if (t == DType::f32) {
    gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (M <= 0 || N <= 0) return;
  // The stored extents, padding included: op(A) is (M, K), so A holds (trans ? K : M) rows of lda.
  const size_t na = size_t(trans_a ? K : M) * lda, nb = size_t(trans_b ? N : K) * ldb;
  // One scratch for both, B starting on a 64-byte boundary (32 halves).
  const size_t b_at = (na + 31) / 32 * 32;
  uint16_t* scratch = detail::thread_scratch<uint16_t>(b_at + nb);
  const TypedPtr a16(scratch, t), b16(scratch + b_at, t);
  convert_from_f32(a16, A, na);
  convert_from_f32(b16, B, nb);
  gemm(trans_a, trans_b, M, N, K, alpha, ConstTypedPtr(a16), lda, ConstTypedPtr(b16), ldb, beta, TypedPtr(C), ldc);
}

void accumulate_weight_grad(float* dW, const float* dy, const float* x, int N, int in, int out) {
  if (gemm_input_dtype() == DType::f32) {
    linear_backward(nullptr, dW, dy, x, nullptr, N, in, out);
    return;
  }
  gemm_run_precision(true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dW, in);
}

}  // namespace ff
