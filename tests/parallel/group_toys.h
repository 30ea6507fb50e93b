#pragma once
// What the toy parameter-group tests share: their segments, their tolerance, and the reference
// they check the state against: one AdamW step over every element in double precision, written
// out from the formula (decoupled weight decay on the decaying elements, bias correction by step
// k) independently of the optimizer under test.
#include <cmath>
#include <cstddef>
#include <vector>

#include "parallel/optimizer.h"
#include "parallel/param_group.h"

namespace ff::testkit {

// A segment split into a decaying matrix and a 7-element norm that does not decay.
inline void add_segment(ParamGroupSpec& g, size_t offset, size_t count) {
  g.segments.push_back({offset, count});
  g.tensors.push_back({offset, count - 7, true});
  g.tensors.push_back({offset + count - 7, 7, false});
}

// float state against the double reference.
inline bool close(double a, double b) { return std::fabs(a - b) <= 1e-6 + 1e-5 * std::fabs(b); }

template <class Grad>  // Grad(i): the summed gradient of element i this step
void serial_adamw_step(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v,
                       const std::vector<char>& decays, const AdamWConfig& adam, float lr, int k, Grad grad) {
  const double b1 = adam.beta1, b2 = adam.beta2;
  for (size_t i = 0; i < p.size(); ++i) {
    const double g = grad(i);
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    const double mhat = m[i] / (1 - std::pow(b1, k)), vhat = v[i] / (1 - std::pow(b2, k));
    if (decays[i]) p[i] *= 1 - double(lr) * adam.weight_decay;
    p[i] -= lr * mhat / (std::sqrt(vhat) + adam.eps);
  }
}

}  // namespace ff::testkit
