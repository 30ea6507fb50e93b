#pragma once
// Causal attention with grouped-query heads, computed tile by tile with an online softmax
// (Dao et al. 2022): the T x T score matrix is never stored, only the per-row log-sum-exp.
//
// Layout: q is read from rows of `q_stride` floats per (b, t) with head h at offset h*D;
// k and v likewise with `kv_stride` and KV heads. Query head h uses KV head h / (H / Hkv).
// out: (B, T, H, D) contiguous; lse: (B, H, T). Scale is 1/sqrt(D).
#include <cstdint>

#include "kernels/attention_block.h"

namespace ff {

struct AttentionShape {
  int B, T, H, Hkv, D;
  int q_stride, kv_stride;  // floats between consecutive (b, t) rows of q and of k/v
  // Optional document ids (B, T), monotone along each row: a query sees only the keys of its own
  // document (attention_block.h). The masked call runs the block kernel, which skips the tiles
  // no row sees and counts them in *tiles (may be null). Null doc: plain causal attention.
  const int32_t* doc = nullptr;
  AttentionTileCounts* tiles = nullptr;
};
// The block a causal call over whole sequences is, with the shape's documents.
AttentionBlock block_of_shape(const AttentionShape& s);

void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                       const AttentionShape& s);
// Accumulates into dq, dk, dv (same layouts/strides as q, k, v). dout: (B, T, H, D).
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const AttentionShape& s);


// Double-precision twins: the reference the tests differentiate numerically.
void attention_forward(double* out, double* lse, const double* q, const double* k,
                       const double* v, const AttentionShape& s);
void attention_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                        const double* k, const double* v, const double* out, const double* lse,
                        const AttentionShape& s);

}  // namespace ff
