#pragma once
// Internal to src/kernels (only for files built with FIVEFOLD_GEMM_ONEDNN): the pieces every
// oneDNN 16-bit matmul of this folder sets up the same way, so the plain products
// (gemm_mixed.cpp), the packed-weight products (packed_weights.cpp) and the per-thread weight
// gradients (wgrad_rows.cpp) cannot drift apart in how they map types and alpha/beta.
#include <dnnl.hpp>

#include <map>
#include <mutex>

#include "core/dtype.h"

namespace ff::onednn {

// The oneDNN type of a 16-bit operand (bf16 or f16; the callers never pass f32).
inline dnnl::memory::data_type type_16bit(DType t) {
  return t == DType::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f16;
}

// C = alpha * product + beta * C as oneDNN attributes: alpha an output scale, beta a sum post-op.
inline dnnl::primitive_attr alpha_beta_attr(float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  return attr;
}

// Matmul primitives cached by shape (creating one costs ~100 us, more than a small product), and
// the shapes oneDNN refused, so they are not tried again. Callers lock `mu` around lookups.
template <class Key>
struct MatmulCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mu;
  std::map<Key, dnnl::matmul> primitives;
  std::map<Key, bool> refused;
};

}  // namespace ff::onednn
