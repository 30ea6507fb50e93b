#pragma once
// SwiGLU activation: h = silu(gate) * up, where the gate and up projections come from one GEMM
// and sit side by side in each row: gate_up (N, 2F) = [gate (F) | up (F)].
#include "core/dtype.h"

namespace ff {

// h: (N, F)
void swiglu_forward(float* h, const float* gate_up, int N, int F);
// Typed forms for activations stored 16-bit (model/activations.h): gate_up read in its own type
// (a 16-bit one widened exactly), the arithmetic fp32, h rounded once on the store. Bitwise the
// fp32 kernel on the widened input, its output converted afterwards. The backward may write
// d_gate_up rounded to 16 bits, once, for the two GEMMs of gate/up's backward that read it.
void swiglu_forward(TypedPtr h, ConstTypedPtr gate_up, int N, int F);
// The GEMM's fp32 gate_up rounded into gate_up_kept (16-bit, (N, 2F)) and h computed from the rounded
// values, row by row in one pass: bitwise convert_from_f32 then the typed forward above.
void swiglu_forward_rounding(TypedPtr h, TypedPtr gate_up_kept, const float* gate_up, int N, int F);
void swiglu_backward(TypedPtr d_gate_up, const float* dh, ConstTypedPtr gate_up, int N, int F);
// d_gate_up (N, 2F) is overwritten (not accumulated): it is a fresh scratch gradient.
void swiglu_backward(float* d_gate_up, const float* dh, const float* gate_up, int N, int F);


// Double-precision twins: the reference the tests differentiate numerically.
void swiglu_forward(double* h, const double* gate_up, int N, int F);
void swiglu_backward(double* d_gate_up, const double* dh, const double* gate_up, int N, int F);

}  // namespace ff
