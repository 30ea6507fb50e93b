#pragma once
// Bulk conversions between fp32 and the 16-bit storage types, vectorised and bitwise equal to the
// scalar conversions of core/dtype.h (round-to-nearest-even, subnormals kept, NaN stays NaN), so
// a tensor converted here matches one converted element by element (tested over every pattern).
#include <cstddef>

#include "core/dtype.h"

namespace ff {

// dst (n elements of dst.dtype()) = src rounded to that type. f32 dst: a copy.
void convert_from_f32(TypedPtr dst, const float* src, size_t n);
// dst (n floats) = src widened (exact for bf16 and f16).
void convert_to_f32(float* dst, ConstTypedPtr src, size_t n);
// x rounded in place to the values `t` can hold (what a round trip through t gives); f32: no-op.
void round_through(float* x, size_t n, DType t);

}  // namespace ff
