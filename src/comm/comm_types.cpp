#include "comm/comm_types.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ff {

size_t comm_type_size(CommType t) {
  switch (t) {
    case CommType::f32: return 4;
    case CommType::f64: return 8;
    case CommType::i32: return 4;
    case CommType::i64: return 8;
    case CommType::u8: return 1;
    case CommType::bf16: return 2;
    case CommType::f16: return 2;
  }
  throw std::invalid_argument("unknown CommType " + std::to_string(int(t)));
}

const char* comm_type_name(CommType t) {
  static const char* names[] = {"f32", "f64", "i32", "i64", "u8", "bf16", "f16"};
  return names[int(t)];
}

CommType comm_type_of(DType t) {
  switch (t) {
    case DType::f32: return CommType::f32;
    case DType::bf16: return CommType::bf16;
    case DType::f16: return CommType::f16;
  }
  throw std::invalid_argument("comm_type_of: unknown DType " + std::to_string(int(t)));
}

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "max", "min"};
  return names[int(op)];
}

const char* comm_op_name(CommOpKind k) {
  static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                "all_to_all", "all_to_allv",    "send",       "recv",
                                "barrier"};
  return names[int(k)];
}

uint64_t CommStats::total_bytes() const {
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  return total;
}

ChunkRange chunk_range(size_t n_total, int parts, int index) {
  if (parts < 1 || index < 0 || index >= parts) {
    throw std::invalid_argument("chunk_range: index " + std::to_string(index) +
                                " is outside [0, " + std::to_string(parts) +
                                "); pass a rank of the group and the group size");
  }
  size_t base = n_total / size_t(parts);
  size_t extra = n_total % size_t(parts);
  size_t i = size_t(index);
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

}  // namespace ff
