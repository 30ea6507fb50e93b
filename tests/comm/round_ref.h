#pragma once
// An independent round-to-nearest-even for the 16-bit tests: the value x rounded to a binary
// format with `bits` significant bits, smallest normal exponent `min_exp` and largest finite
// value `max_finite`, computed in double with frexp/ldexp/nearbyint instead of bit tricks.
#include <cfenv>
#include <cmath>
#include <limits>

namespace ff::test {

struct FloatFormat {
  int bits;           // significant bits, the implicit one included
  int min_exp;        // exponent of the smallest normal
  double max_finite;  // largest finite value
};
inline constexpr FloatFormat kBinary16{11, -14, 65504.0};
inline constexpr FloatFormat kBfloat16{8, -126, 3.38953138925153547590470800371487866880e38};

inline double round_ref(double x, FloatFormat f) {
  if (x == 0 || std::isnan(x) || std::isinf(x)) return x;
  int e = 0;
  std::frexp(std::fabs(x), &e);                       // |x| = m 2^e, m in [0.5, 1)
  int lead = std::max(e - 1, f.min_exp);              // subnormals share the smallest exponent
  double quantum = std::ldexp(1.0, lead - (f.bits - 1));
  // Division by a power of two is exact; nearbyint rounds ties to even in the default mode.
  double q = std::nearbyint(std::fabs(x) / quantum) * quantum;
  if (q > f.max_finite) q = std::numeric_limits<double>::infinity();
  return std::copysign(q, x);
}

}  // namespace ff::test
