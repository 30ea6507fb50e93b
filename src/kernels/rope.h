#pragma once
// Rotary position embedding in Hugging Face's rotate-half convention: within a head of size D,
// element i < D/2 pairs with i + D/2, and the angle of position t, pair i is t * theta^(-2i/D).
#include "core/dtype.h"

namespace ff {

// cos, sin: (T, D/2)
void rope_tables(float* cos, float* sin, int T, int D, float theta);
// In place on x: rows of `row_stride` floats, one per (b, t); each row holds `heads` heads of D
// contiguous floats starting at offset 0. Positions are t = row % T.
void rope_forward(float* x, const float* cos, const float* sin, int B, int T, int heads, int D,
                  int row_stride);
// In place on the gradient: the inverse (transposed) rotation.
void rope_backward(float* dx, const float* cos, const float* sin, int B, int T, int heads, int D,
                   int row_stride);
// The backward of both rotations of a fused q/k/v gradient row (q's `heads` heads from column 0,
// then k's `kv_heads`, then v's columns up to row_stride, which are not rotated), stored rounded
// into out (16-bit, same row stride) and dx left unchanged: the q/k/v GEMM's output gradient
// rounded in the pass that rotates it, bitwise rope_backward twice and convert_from_f32 after.
void rope_backward_rounded(TypedPtr out, const float* dx, const float* cos, const float* sin, int B, int T,
                           int heads, int kv_heads, int D, int row_stride);


// Double-precision twins: the reference the tests differentiate numerically.
void rope_tables(double* cos, double* sin, int T, int D, double theta);
void rope_forward(double* x, const double* cos, const double* sin, int B, int T, int heads, int D,
                  int row_stride);
void rope_backward(double* dx, const double* cos, const double* sin, int B, int T, int heads,
                   int D, int row_stride);

}  // namespace ff
