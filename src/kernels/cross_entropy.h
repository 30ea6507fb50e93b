#pragma once
// Softmax cross-entropy fused with its gradient. The logits buffer is overwritten in place by
// d(loss)/d(logits) so the (N, V) gradient never needs a second buffer.
#include <cstdint>

#include "core/dtype.h"

namespace ff {

// A target that is not a loss target (a prompt token under completion-only loss): its row's loss
// is 0 and its gradient row is 0, in every loss kernel (PyTorch's ignore_index). Rows with real
// targets compute exactly what they would without it.
constexpr int32_t kIgnoredTarget = -1;

// logits: (N, V), in: logits, out: grad_scale * (softmax - onehot) per row (0 for an ignored target).
// losses: (N) per-row -log p(target), 0 for an ignored target. Returns the sum of losses (double
// accumulator).
double cross_entropy_forward_backward(float* logits, float* losses, const int32_t* targets, int N,
                                      int V, float grad_scale);
// The same, and each row's gradient also stored rounded into grad_rounded (16-bit, (N, V)) while
// the row is in cache: the LM head's GEMMs read it without a rounding pass over the (N, V) tensor.
double cross_entropy_forward_backward(float* logits, float* losses, const int32_t* targets, int N, int V,
                                      float grad_scale, TypedPtr grad_rounded);
// Loss only; logits are left untouched.
double cross_entropy_forward(const float* logits, float* losses, const int32_t* targets, int N,
                             int V);


// Double-precision twins: the reference the tests differentiate numerically.
double cross_entropy_forward_backward(double* logits, double* losses, const int32_t* targets,
                                      int N, int V, double grad_scale);
double cross_entropy_forward(const double* logits, double* losses, const int32_t* targets, int N,
                             int V);

}  // namespace ff
