#include "comm/reduce.h"

#include <cstdint>

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

}  // namespace

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
  }
}

}  // namespace ff::detail
