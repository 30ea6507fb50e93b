#pragma once
// RMSNorm as in LLaMA / HF LlamaRMSNorm: y = x * rsqrt(mean(x^2) + eps) * w.
#include "core/dtype.h"

namespace ff {

// x, y: (N, C); w: (C); rstd: (N) saved for backward.
void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int N, int C,
                     float eps);
// y written in its own type (f32, or a 16-bit activation a GEMM reads next): computed in fp32
// and rounded once on the store, bitwise the fp32 output converted afterwards.
void rmsnorm_forward(TypedPtr y, float* rstd, const float* x, const float* w, int N, int C, float eps);
// Accumulates: dx += ..., dw += ...
void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w,
                      const float* rstd, int N, int C);
// The same, and each updated row of dx also stored rounded into dx_rounded (16-bit, (N, C)) while
// it is in cache: the residual gradient a 16-bit GEMM reads next, without a rounding pass.
void rmsnorm_backward(float* dx, TypedPtr dx_rounded, float* dw, const float* dy, const float* x,
                      const float* w, const float* rstd, int N, int C);


// Double-precision twins: the reference the tests differentiate numerically.
void rmsnorm_forward(double* y, double* rstd, const double* x, const double* w, int N, int C,
                     double eps);
void rmsnorm_backward(double* dx, double* dw, const double* dy, const double* x, const double* w,
                      const double* rstd, int N, int C);

}  // namespace ff
