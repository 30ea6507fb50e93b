#pragma once
// Internal to flash_attention_bf16.cpp: where its backward's gradients go. Each (batch, KV head)
// task ends with dQ of each query head of its group, dK and dV summed in fp32 scratch rows; these
// store them:
//   - into fp32 dq, dk, dv, added to what is there (attention_backward_bf16, the block forms);
//   - overwriting them (each element is written once per call) as 0 + the gradient: the bits of
//     zeroing them first and adding, without that pass (attention_backward_bf16_into);
//   - those same fp32 values with q's and k's rotated back by RoPE's backward and all three
//     rounded to bf16 (attention_backward_bf16_rope_rounded): what a bf16 q/k/v GEMM reads.
#include <cstddef>
#include <cstdint>

#include "kernels/rope_row.h"
#include "kernels/round_store.h"
#include "kernels/simd.h"

namespace ff::attn16 {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

struct GradOut {
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;
  bool add = true;
  uint16_t *q16 = nullptr, *k16 = nullptr, *v16 = nullptr;  // set: the rounded form
  const float *cos = nullptr, *sin = nullptr;                // RoPE's tables (T, D/2), rows by position
};

// The row at position t rotated back (rope_row.h: the body rope.cpp's backward runs) into y, rounded.
inline void rotate_back(uint16_t* y, const float* row, const GradOut& o, int t, int D) {
  const size_t at = size_t(t) * (D / 2);
  rope_detail::rotate_row<float, detail::StoreBf16>(y, row, o.cos + at, o.sin + at, 1, D, -1.0f);
}

// One query head's row at element offset `at` of dq: scale * src (src: D floats of scratch, which
// the rounded form overwrites with the fp32 row it rotates).
FF_WIDE inline void store_q_row(const GradOut& o, long at, float* src, float scale, int t, int D) {
  if (o.q16) {
    for (int c = 0; c < D; ++c) src[c] = 0.0f + scale * src[c];
    rotate_back(o.q16 + at, src, o, t, D);
  } else if (o.add) {
    for (int c = 0; c < D; ++c) o.dq[at + c] += scale * src[c];
  } else {
    for (int c = 0; c < D; ++c) o.dq[at + c] = 0.0f + scale * src[c];
  }
}

// The KV head's row at element offset `off` of dk and dv: scale * dk_row and dv_row (dk_row as src
// above).
FF_WIDE inline void store_kv_row(const GradOut& o, long off, float* dk_row, const float* dv_row, float scale, int t,
                                 int D) {
  if (o.q16) {
    for (int c = 0; c < D; ++c) dk_row[c] = 0.0f + scale * dk_row[c];
    rotate_back(o.k16 + off, dk_row, o, t, D);
    for (int c = 0; c < D; ++c) o.v16[off + c] = detail::StoreBf16::cast(0.0f + dv_row[c]);
  } else if (o.add) {
    for (int c = 0; c < D; ++c) {
      o.dk[off + c] += scale * dk_row[c];
      o.dv[off + c] += dv_row[c];
    }
  } else {
    for (int c = 0; c < D; ++c) {
      o.dk[off + c] = 0.0f + scale * dk_row[c];
      o.dv[off + c] = 0.0f + dv_row[c];
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn16
