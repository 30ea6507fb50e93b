#pragma once
// grad_reduce_dtype: the element type gradients cross the data-parallel group in.
//   fp32 (the default): the fp32 gradient buffers are reduced as they are.
//   bf16: a reduction's input is rounded (RNE) into a bf16 wire buffer, the collective widens
//         every rank's contribution to fp32, sums them and rounds the sum once (comm_types.h),
//         and the result is widened back into fp32: half the bytes on the wire, at the price of
//         two roundings to 8 mantissa bits (each rank's contribution, then the sum).
// Accumulation over micro-batches stays in fp32 either way; with bf16 on the wire that fp32
// buffer is the "fp32 gradient accumulation" of FORMULAS.md's 20Ψ (2Ψ bf16 + 4Ψ fp32 gradients).
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/memory.h"

namespace ff {

// The config key grad_reduce_dtype: fp32 | bf16.
const EnumTable<DType>& grad_reduce_dtype_names();

// The bf16 side of gradient reductions: n words accounted under a ledger category. Empty (and
// every call a no-op) when the wire dtype is f32, so the fp32 path is the code it always was.
class GradWire {
 public:
  GradWire() = default;
  GradWire(DType wire, size_t n, MemCategory c);
  bool active() const { return words_.data() != nullptr; }
  // Words [at, at + n) as a typed pointer a Comm operation takes.
  TypedPtr at(size_t at) { return {words_.data() + at, DType::bf16}; }
  // words[at, at + n) = src rounded to bf16.
  void round_in(const float* src, size_t at, size_t n);
  // dst[0, n) = words[at, at + n) widened (exact).
  void widen_out(float* dst, size_t at, size_t n) const;

 private:
  TrackedBuffer<uint16_t> words_;
};

}  // namespace ff
