#pragma once
// Internal: elementwise reductions used by the collectives, dst[i] = a[i] (op) b[i]. dst may
// alias a (the in-place accumulate of all_reduce). The order of operands is fixed by the
// caller, which is what keeps every collective's result bitwise reproducible.
#include <cstddef>

#include "comm/comm_types.h"

namespace ff::detail {

void reduce_into(void* dst, const void* a, const void* b, size_t n, CommType type, ReduceOp op);

}  // namespace ff::detail
