#pragma once
// Internal: elementwise reductions used by the collectives, dst[i] = a[i] (op) b[i]. dst may
// alias a (the in-place accumulate of all_reduce). The order of operands is fixed by the
// caller, which is what keeps every collective's result bitwise reproducible.
#include <cstddef>

#include "comm/comm_types.h"

namespace ff::detail {

// For every type except bf16/f16.
void reduce_into(void* dst, const void* a, const void* b, size_t n, CommType type, ReduceOp op);

// bf16/f16 reduce in fp32: acc[i] = (a ? widen(a[i]) : acc[i]) (op) widen(b[i]), so the first
// step of a chunk widens both operands and every later one folds into the fp32 accumulator;
// narrow_into then rounds each element once (round-to-nearest-even) into the 16-bit result.
void reduce_widened(float* acc, const void* a, const void* b, size_t n, CommType type, ReduceOp op);
void narrow_into(void* dst, const float* acc, size_t n, CommType type);

}  // namespace ff::detail
