#pragma once
// Vocab-parallel cross-entropy (Megatron): each rank holds columns [first, first + Vl) of the
// logits, which are never gathered (the embedding's slice kernels are in embedding.h). The caller
// supplies the two small reductions between the phases (a max, then a sum, of N floats each).
// A row whose target is kIgnoredTarget has loss 0 and gradient 0, as in cross_entropy.h.
#include <cstdint>

#include "kernels/cross_entropy.h"

namespace ff {

// Phase 1: row_max (N) = max over this rank's columns of logits (N, Vl). Reduce with max.
void vocab_slice_row_max(const float* logits, float* row_max, int N, int Vl);
// Phase 2, with row_max now global: partials (2N) = per row the sum of exp(logit - max) over this
// rank's columns, then the target's logit if this rank holds it (0 otherwise). Reduce with sum.
// keep_exp: overwrite the logits with exp(logit - max), which phase 3 turns into the gradient.
void vocab_slice_partials(float* logits, const float* row_max, const int32_t* targets, int N,
                          int Vl, int first, bool keep_exp, float* partials);
// Phase 3 with partials summed: losses (N) = log(sum) + max - target logit; returns their sum
// (in row order). If the logits hold exp(logit - max) from phase 2, they become
// grad_scale * (softmax - onehot) for this rank's columns; pass exps = false to skip that.
double vocab_slice_finish(float* logits, const float* row_max, const float* partials,
                          const int32_t* targets, int N, int Vl, int first, bool exps,
                          float grad_scale, float* losses);

}  // namespace ff
