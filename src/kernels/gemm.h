#pragma once
// The one GEMM entry point. Row-major: C(M,N) = alpha * op(A) * op(B) + beta * C, with
// op(A) of shape (M,K) and op(B) of shape (K,N); lda/ldb/ldc are row strides of the stored
// matrices. The backend (oneDNN or OpenBLAS) is chosen at build time by measurement; see
// bench/RESULTS.md. Called inside an OpenMP parallel region it runs on the calling thread only.
#include "core/dtype.h"

namespace ff {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// The same product over typed operands: the entry point mixed precision plugs into (bf16 or f16
// A and B with fp32 accumulation into C). Today every operand must be f32; any other combination
// throws naming the dtypes rather than reading 16-bit data as floats.
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, ConstTypedPtr A, int lda,
          ConstTypedPtr B, int ldb, float beta, TypedPtr C, int ldc);

// Convenience for the model's linear layers, weights stored (out, in) as in PyTorch/HF.
// y(N,out) = x(N,in) W^T (+ y if accumulate)
void linear_forward(float* y, const float* x, const float* W, int N, int in, int out,
                    bool accumulate = false);
// dx(N,in) += dy(N,out) W ; dW(out,in) += dy^T x. Either output may be null to skip it.
void linear_backward(float* dx, float* dW, const float* dy, const float* x, const float* W, int N,
                     int in, int out);

const char* gemm_backend_name();

// The measured sgemm ceiling for MFU: GFLOP/s of an n x n x n product of the chosen backend on
// `threads` threads (0: omp_get_max_threads()), the best of the products that fit in ~0.4 s
// after a warm-up. About 0.5 s in all for n = 2048 on this machine.
double measure_sgemm_gflops(int n = 2048, int threads = 0);

}  // namespace ff
