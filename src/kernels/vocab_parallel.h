#pragma once
// Kernels for a vocabulary split across tensor-parallel ranks (Megatron's VocabParallelEmbedding
// and vocab-parallel cross-entropy). Each rank holds rows [first, first + count) of the embedding
// and the same columns of the logits; the (N, V) logits are never gathered. The caller supplies
// the two small reductions between the phases (a max, then a sum, of N floats each).
#include <cstdint>

namespace ff {

// out (N, C) = table row (token - first) for tokens this rank holds, 0 for the others; the
// sum over ranks is the full lookup.
void embedding_forward_slice(float* out, const int32_t* tokens, const float* table, int N, int C,
                             int first, int count);
// dtable[token - first] += dout[n] for the tokens this rank holds.
void embedding_backward_slice(float* dtable, const float* dout, const int32_t* tokens, int N,
                              int C, int first, int count);

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
