#pragma once
// SwiGLU activation: h = silu(gate) * up, where the gate and up projections come from one GEMM
// and sit side by side in each row: gate_up (N, 2F) = [gate (F) | up (F)].
#include "core/dtype.h"

namespace ff {

// h: (N, F)
void swiglu_forward(float* h, const float* gate_up, int N, int F);
// h written in its own type (f32, or a 16-bit activation the down GEMM reads): computed in fp32
// and rounded once on the store, bitwise the fp32 output converted afterwards.
void swiglu_forward(TypedPtr h, const float* gate_up, int N, int F);
// d_gate_up (N, 2F) is overwritten (not accumulated): it is a fresh scratch gradient.
void swiglu_backward(float* d_gate_up, const float* dh, const float* gate_up, int N, int F);


// Double-precision twins: the reference the tests differentiate numerically.
void swiglu_forward(double* h, const double* gate_up, int N, int F);
void swiglu_backward(double* d_gate_up, const double* dh, const double* gate_up, int N, int F);

}  // namespace ff
