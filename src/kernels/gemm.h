#pragma once
// The one GEMM entry point. Row-major: C(M,N) = alpha * op(A) * op(B) + beta * C, with
// op(A) of shape (M,K) and op(B) of shape (K,N); lda/ldb/ldc are row strides of the stored
// matrices. The backend (oneDNN or OpenBLAS) is chosen at build time by measurement; see
// bench/RESULTS.md. Called inside an OpenMP parallel region it runs on the calling thread only.
#include "core/dtype.h"

namespace ff {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);

// The same product over typed operands (gemm_mixed.cpp): f32 x f32, or bf16 x bf16 and f16 x f16
// with fp32 accumulation into an f32 C (oneDNN's matmul, one primitive cached per shape, or
// fivefold's tile GEMM where gemm_on_fivefold_tiles; widened to fp32 where neither has a kernel). Any other combination throws naming the dtypes rather than
// reading 16-bit data as floats.
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

// True when the typed gemm runs products of type t on fivefold's own tile GEMM (gemm_amx.h: bf16,
// where gemm_tiles() says so) instead of oneDNN; oneDNN's packed weights (packed_weights.h) and
// per-thread weight gradients (wgrad_rows.h) then stand aside, so every such product takes it.
bool gemm_on_fivefold_tiles(DType t);
// True when oneDNN builds a native 16-bit matmul for `t` on this CPU (else gemm widens to fp32).
bool native_16bit_gemm(DType t);
// GFLOP/s of C(M,N) = op(A) op(B) with operands of type t (f32: the fp32 path), best of the
// products that fit in ~0.3 s after a warm-up; for the bf16-vs-fp32 micro-bench.
double measure_gemm_gflops(DType t, int M, int N, int K, bool trans_a, bool trans_b, int threads = 0);

// The measured sgemm ceiling for MFU: GFLOP/s of an n x n x n product of the chosen backend on
// `threads` threads (0: omp_get_max_threads()), the best of the products that fit in ~0.4 s
// after a warm-up. About 0.5 s in all for n = 2048 on this machine.
double measure_sgemm_gflops(int n = 2048, int threads = 0);

}  // namespace ff
