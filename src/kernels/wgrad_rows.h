#pragma once
// The 16-bit weight-gradient product dW(M,N) = beta dW + dy^T x with its rows dealt out to the
// threads: each thread runs its own single-threaded oneDNN matmul over its block of dW's rows.
//
// Why: oneDNN's 2-thread bf16 matmul runs these products (both operands activations, K = the
// tokens, A read transposed) at ~590 GFLOP/s on the `bench` shapes (Zen 5, 2 threads), against
// ~790 for the forward and dgrad products; a single-threaded matmul of the same shape runs at
// ~360-390 per thread. Two independent row halves, one per thread, run at ~700-760 together:
// each thread copies and transposes only its own half of dy and no thread waits on the other
// mid-product (bench/RESULTS.md, issue 11).
//
// Each row of dW is computed by the same kernel over the same K order as in the 2-thread product,
// so the result is expected to be bitwise oneDNN's 2-thread product (tests check it on odd shapes).
#include "core/dtype.h"

namespace ff {

// C(M,N) = beta C + A^T B with A stored (K,M) row-major (lda), B stored (K,N) (ldb), both 16-bit of
// one dtype, C fp32 (ldc). False, with nothing done, when the split does not apply (one thread,
// already inside a parallel region, fewer than 16 rows per thread, no oneDNN kernel for the dtype,
// or switched off): the caller runs the plain product.
bool wgrad_rows_per_thread(int M, int N, int K, ConstTypedPtr A, int lda, ConstTypedPtr B, int ldb, float beta,
                           float* C, int ldc);

// On by default; for tests and benchmarks comparing both paths (a run does not change it).
void set_wgrad_rows_enabled(bool on);
bool wgrad_rows_enabled();
// How many products ran split since the start (tests: the path they mean to test ran).
long wgrad_rows_products();

}  // namespace ff
