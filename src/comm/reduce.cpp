// Elementwise reductions of the collectives (declared in op.h).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/op.h"

namespace ff::detail {
namespace {

// Plain loops: at -O3 the compiler vectorises them (with a runtime alias check for dst == a),
// which is all a memory-bound reduction needs.
template <typename T>
void reduce_typed(T* dst, const T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      for (size_t i = 0; i < n; ++i) dst[i] = T(a[i] + b[i]);
      break;
    case ReduceOp::max:
      for (size_t i = 0; i < n; ++i) dst[i] = a[i] < b[i] ? b[i] : a[i];
      break;
    case ReduceOp::min:
      for (size_t i = 0; i < n; ++i) dst[i] = b[i] < a[i] ? b[i] : a[i];
      break;
  }
}

template <float (*widen)(uint16_t), typename Combine>
void fold_widened(float* acc, const uint16_t* a, const uint16_t* b, size_t n, Combine combine) {
  if (a) for (size_t i = 0; i < n; ++i) acc[i] = combine(widen(a[i]), widen(b[i]));
  else for (size_t i = 0; i < n; ++i) acc[i] = combine(acc[i], widen(b[i]));
}

template <float (*widen)(uint16_t)>
void reduce_widened_typed(float* acc, const uint16_t* a, const uint16_t* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      fold_widened<widen>(acc, a, b, n, [](float x, float y) { return x + y; });
      break;
    case ReduceOp::max:
      fold_widened<widen>(acc, a, b, n, [](float x, float y) { return x < y ? y : x; });
      break;
    case ReduceOp::min:
      fold_widened<widen>(acc, a, b, n, [](float x, float y) { return y < x ? y : x; });
      break;
  }
}

[[noreturn]] void not_16bit(CommType type, const char* where) {
  throw std::logic_error(std::string(where) + " called for " + comm_type_name(type) +
                         "; only bf16 and f16 reduce through an fp32 accumulator");
}

}  // namespace

void reduce_widened(float* acc, const void* a, const void* b, size_t n, CommType type, ReduceOp op) {
  auto* a16 = static_cast<const uint16_t*>(a);
  auto* b16 = static_cast<const uint16_t*>(b);
  if (type == CommType::bf16) reduce_widened_typed<bf16_to_f32>(acc, a16, b16, n, op);
  else if (type == CommType::f16) reduce_widened_typed<f16_to_f32>(acc, a16, b16, n, op);
  else not_16bit(type, "reduce_widened");
}

void narrow_into(void* dst, const float* acc, size_t n, CommType type) {
  auto* out = static_cast<uint16_t*>(dst);
  if (type == CommType::bf16) for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(acc[i]);
  else if (type == CommType::f16) for (size_t i = 0; i < n; ++i) out[i] = f32_to_f16(acc[i]);
  else not_16bit(type, "narrow_into");
}

void reduce_into(void* dst, const void* a, const void* b, size_t n, CommType type, ReduceOp op) {
  switch (type) {
    case CommType::f32:
      reduce_typed(static_cast<float*>(dst), static_cast<const float*>(a),
                   static_cast<const float*>(b), n, op);
      break;
    case CommType::f64:
      reduce_typed(static_cast<double*>(dst), static_cast<const double*>(a),
                   static_cast<const double*>(b), n, op);
      break;
    case CommType::i32:
      reduce_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(a),
                   static_cast<const int32_t*>(b), n, op);
      break;
    case CommType::i64:
      reduce_typed(static_cast<int64_t*>(dst), static_cast<const int64_t*>(a),
                   static_cast<const int64_t*>(b), n, op);
      break;
    case CommType::u8:  // sums wrap modulo 256, as MPI_SUM on MPI_UINT8_T
      reduce_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(a),
                   static_cast<const uint8_t*>(b), n, op);
      break;
    case CommType::bf16:
    case CommType::f16:
      throw std::logic_error("reduce_into: 16-bit floats reduce in fp32 through reduce_widened");
  }
}

}  // namespace ff::detail
