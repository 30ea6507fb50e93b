#pragma once
// The 16-bit weight-gradient product dW(M,N) = beta dW + dy^T x with its rows dealt out to the
// threads: each thread runs its own single-threaded oneDNN matmul over its block of dW's rows.
//
// Why: oneDNN's 2-thread bf16 matmul runs these products (both operands activations, K = the
// tokens, A read transposed) at ~575 GFLOP/s inside a `bench` step (Zen 5, 2 threads), against ~790
// for the forward and dgrad products. Each thread's own row block, one single-threaded matmul each,
// runs at ~640 in the step (~9 ms of a ~325 ms bf16 step; bench/RESULTS.md).
//
// oneDNN's 2-thread product sums K in another order than its 1-thread one, so the split's fp32 sums
// differ from the unsplit product's in the last bits (bf16 tolerances; tests/kernels/test_wgrad_rows).
#include "core/dtype.h"

namespace ff {

// C(M,N) = beta C + A^T B with A stored (K,M) row-major (lda), B stored (K,N) (ldb), both 16-bit of
// one dtype, C fp32 (ldc). False, with nothing done, when the split does not apply (one thread,
// already inside a parallel region, fewer than 16 rows per thread, or no oneDNN kernel for the
// dtype): the caller runs the plain product. Whether to try it at all is the caller's
// (GemmContext::wgrad_rows, gemm_context.h, which also counts the products that ran split).
bool wgrad_rows_per_thread(int M, int N, int K, ConstTypedPtr A, int lda, ConstTypedPtr B, int ldb, float beta,
                           float* C, int ldc);

}  // namespace ff
