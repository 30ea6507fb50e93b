#pragma once
// Weights pre-packed in oneDNN's blocked layout for the 16-bit GEMMs that read a weight: the
// forward x W^T and the input gradient dy W. Given a plain (row-major) weight, oneDNN's bf16 matmul
// re-packs it into its blocked (VNNI) layout on every call, on both threads: measured on the
// `bench` shapes with random data, the packed product runs ~15% faster than the plain one
// (bench/RESULTS.md). The weight copy (weight_copy.h) changes once per step, so each
// weight is packed once per step per product that reads it (twice: x W^T and dy W read it in
// different orders), at the first product after the copy's refresh.
//
// The packed product is bitwise the plain one (the same kernel after the same re-packing; tested),
// so packing changes no number, only time and memory: each packed weight holds 2 bytes per element
// per product kind (plus padding to oneDNN's blocks when a dimension is not a multiple of 64), in
// the ledger's params category, alive as long as the weight copy that owns it.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/dtype.h"

namespace ff {

// One product with a packed weight: C(M,N) = alpha A(M,K) op(W) + beta C, A row-major (lda), C
// row-major (ldc); W is the 16-bit weight stored (N,K) row-major when trans_w (x W^T), else (K,N).
// C is fp32, or 16-bit (c_dtype, the weight's type, beta 0): the product then rounds each fp32
// accumulator as it stores it, the bits of the fp32 product rounded afterwards (round to nearest
// even; the one difference: oneDNN's bf16 stores flush a denormal fp32 result to zero).
struct PackedProduct {
  bool trans_w = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* A = nullptr;  // 16-bit, the weight's dtype
  int lda = 0;
  void* C = nullptr;  // c_dtype
  int ldc = 0;
  DType c_dtype = DType::f32;
};

class PackedWeights {
 public:
  PackedWeights();
  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // Runs p with the packed twin of w16 (a dense (N,K) or (K,N) matrix of dtype t), packing it
  // first when this generation of the weights has not been packed yet. False (nothing done) when
  // oneDNN cannot run this product packed: the caller multiplies plainly. Whether to pack at all is
  // the caller's (GemmContext::packed_weights, gemm_context.h).
  bool multiply(const void* w16, DType t, uint64_t generation, const PackedProduct& p);
  size_t bytes() const;    // the packed copies' storage
  size_t packings() const;  // how many times a weight was packed (tests: once per refresh)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ff
