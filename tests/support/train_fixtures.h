#pragma once
// How far a parallel run is from the serial run it must reproduce: the worst relative difference
// of the per-step losses and the worst absolute difference of the final weights. A run of another
// length or model size counts as infinitely far.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "train/trainer.h"

namespace ff::testkit {

struct RunDistance {
  double worst_loss = 0;    // max over steps of |a - b| / |b|
  double worst_weight = 0;  // max over parameters of |a - b|
  bool within(double loss_tol, double weight_tol) const { return worst_loss <= loss_tol && worst_weight <= weight_tol; }
};

inline RunDistance distance(const Trainer& run, const std::vector<float>& run_weights, const Trainer& serial,
                            const std::vector<float>& serial_weights) {
  RunDistance d;
  if (run.history().size() != serial.history().size() || run_weights.size() != serial_weights.size())
    return {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (size_t i = 0; i < serial.history().size(); ++i) {
    const double a = run.history()[i].loss, b = serial.history()[i].loss;
    d.worst_loss = std::max(d.worst_loss, std::fabs(a - b) / std::fabs(b));
  }
  for (size_t i = 0; i < serial_weights.size(); ++i)
    d.worst_weight = std::max(d.worst_weight, double(std::fabs(run_weights[i] - serial_weights[i])));
  return d;
}

}  // namespace ff::testkit
