#pragma once
#include <cstdint>
// Token embedding lookup and its scatter-add backward.
namespace ff {

// out (N, C) = table[tokens[i]]
void embedding_forward(float* out, const int32_t* tokens, const float* table, int N, int C);
// dtable[tokens[i]] += dout[i]; serial over rows that share a token, so results are
// deterministic.
void embedding_backward(float* dtable, const float* dout, const int32_t* tokens, int N, int C,
                        int V);

// Vocab-parallel (Megatron's VocabParallelEmbedding): the table holds vocabulary rows
// [first, first + count); tokens outside give zero rows (the sum over ranks is the full lookup)
// and no gradient.
void embedding_forward_slice(float* out, const int32_t* tokens, const float* table, int N, int C,
                             int first, int count);
void embedding_backward_slice(float* dtable, const float* dout, const int32_t* tokens, int N,
                              int C, int first, int count);


// Double-precision twins: the reference the tests differentiate numerically.
void embedding_forward(double* out, const int32_t* tokens, const double* table, int N, int C);
void embedding_backward(double* dtable, const double* dout, const int32_t* tokens, int N, int C,
                        int V);

}  // namespace ff
