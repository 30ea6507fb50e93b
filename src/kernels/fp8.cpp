#include "kernels/fp8.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ff {
namespace {

struct Format {
  int mantissa_bits;
  int min_normal_exp;  // exponent of the smallest normal number: 2^(1 - bias)
  float max;
};

Format format(Fp8Format f) {
  return f == Fp8Format::e4m3 ? Format{3, -6, 448.0f} : Format{2, -14, 57344.0f};
}

}  // namespace

float fp8_max(Fp8Format f) { return format(f).max; }

float round_to_fp8(float x, Fp8Format f) {
  if (std::isnan(x)) return x;
  const Format fm = format(f);
  const float a = std::fabs(x);
  if (a >= fm.max) return std::copysign(fm.max, x);
  if (a == 0.0f) return x;
  // The spacing of the format at a: 2^(e - m) with e the binade of a (x = f * 2^e, f in [1, 2)),
  // floored at the subnormal spacing. Dividing by a power of two is exact, so rintf (round to
  // nearest even in the default mode) rounds exactly once.
  int e2 = 0;
  std::frexp(a, &e2);  // a = g * 2^e2 with g in [0.5, 1): the binade exponent is e2 - 1
  const int e = std::max(e2 - 1, fm.min_normal_exp);
  const float q = std::ldexp(std::rint(std::ldexp(a, fm.mantissa_bits - e)), e - fm.mantissa_bits);
  return std::copysign(std::min(q, fm.max), x);
}

float fake_quantise_fp8(float* x, size_t n, float scale, Fp8Format f) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    x[i] = round_to_fp8(x[i] * scale, f) / scale;
  }
  return amax;
}

Fp8DelayedScale::Fp8DelayedScale(Fp8Format f, int history, int margin)
    : f_(f), margin_(margin), history_(size_t(std::max(1, history)), 0.0f) {}

void Fp8DelayedScale::quantise(float* x, size_t n) { record(fake_quantise_fp8(x, n, scale_, f_)); }

void Fp8DelayedScale::record(float amax) {
  if (!std::isfinite(amax)) return;  // an overflowed step must not poison the history
  history_[next_] = amax;
  next_ = (next_ + 1) % history_.size();
  const float hist_max = *std::max_element(history_.begin(), history_.end());
  if (hist_max > 0.0f) scale_ = fp8_max(f_) / hist_max / std::ldexp(1.0f, margin_);
}

std::vector<float> Fp8DelayedScale::state() const {
  std::vector<float> s{scale_, float(next_)};  // next_ < 2^24: exact in a float
  s.insert(s.end(), history_.begin(), history_.end());
  return s;
}

void Fp8DelayedScale::restore(const std::vector<float>& s) {
  if (s.size() != history_.size() + 2 || !(s[1] >= 0 && s[1] < float(history_.size())))
    throw std::runtime_error("fp8 scaling state of " + std::to_string(s.size() < 2 ? 0 : s.size() - 2) +
                             " history entries does not fit this run's amax history of " +
                             std::to_string(history_.size()));
  scale_ = s[0], next_ = size_t(s[1]);
  std::copy(s.begin() + 2, s.end(), history_.begin());
}

}  // namespace ff
