#pragma once
// Rotary position embedding in Hugging Face's rotate-half convention: within a head of size D,
// element i < D/2 pairs with i + D/2, and the angle of position t, pair i is t * inv_freq(i), where
// inv_freq(i) = theta^(-2i/D), changed by a context-extension scaling when a model was trained with
// one (Hugging Face's rope_scaling).
#include "core/dtype.h"

namespace ff {

enum class RopeScalingKind {
  none,
  linear,  // every frequency divided by factor (position interpolation, Chen et al. 2023)
  llama3,  // Llama 3.1+: long wavelengths divided by factor, short ones kept, a smooth ramp between
};

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::none;
  float factor = 1.0f;           // HF factor
  float low_freq_factor = 1.0f;   // llama3: wavelengths above original_context / low_freq_factor are scaled
  float high_freq_factor = 4.0f;  // llama3: wavelengths below original_context / high_freq_factor are kept
  int original_context = 8192;    // llama3: HF original_max_position_embeddings
  bool operator==(const RopeScaling&) const = default;
};

// inv_freq(i) for i < D/2 in HF's float32 order of operations: 1 / theta^(2i/D), then the scaling.
void rope_inverse_frequencies(float* inv_freq, int D, float theta, const RopeScaling& scaling = {});
void rope_inverse_frequencies(double* inv_freq, int D, double theta, const RopeScaling& scaling = {});

// cos, sin: (T, D/2)
void rope_tables(float* cos, float* sin, int T, int D, float theta, const RopeScaling& scaling = {});
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
void rope_tables(double* cos, double* sin, int T, int D, double theta, const RopeScaling& scaling = {});
void rope_forward(double* x, const double* cos, const double* sin, int B, int T, int heads, int D,
                  int row_stride);
void rope_backward(double* dx, const double* cos, const double* sin, int B, int T, int heads,
                   int D, int row_stride);

}  // namespace ff
