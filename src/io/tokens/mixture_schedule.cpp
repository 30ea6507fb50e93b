#include "io/tokens/mixture_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ff {

MixtureSchedule::MixtureSchedule(const std::vector<double>& weights) : counts_(weights.size(), 0) {
  if (weights.empty()) throw std::logic_error("MixtureSchedule: no source");
  double sum = 0;
  for (double w : weights) {
    if (!(w > 0) || !std::isfinite(w))
      throw std::logic_error("MixtureSchedule: weight " + std::to_string(w) + " is not a positive number");
    sum += w;
  }
  for (double w : weights) weights_.push_back(w / sum);
}

size_t MixtureSchedule::next() {
  size_t best = 0;
  if (weights_.size() > 1) {
    const double after = double(drawn_ + 1);
    // Deficits equal in exact arithmetic (weights 0.3 and 0.7 tie at every tenth row) may differ
    // by the rounding of w * after, a few ulps of `after`; a smaller lead is a tie, kept by the
    // lower index. Distinct deficits of decimal weights lie far further apart than this.
    const double tie = 8 * std::numeric_limits<double>::epsilon() * after;
    double best_deficit = weights_[0] * after - double(counts_[0]);
    for (size_t i = 1; i < weights_.size(); ++i) {
      const double deficit = weights_[i] * after - double(counts_[i]);
      if (deficit > best_deficit + tie) best = i, best_deficit = deficit;
    }
  }
  ++counts_[best];
  ++drawn_;
  return best;
}

void MixtureSchedule::reset(uint64_t drawn) {
  std::fill(counts_.begin(), counts_.end(), 0);
  drawn_ = 0;
  if (weights_.size() == 1) {  // one source takes every sequence: nothing to replay
    counts_[0] = drawn_ = drawn;
    return;
  }
  while (drawn_ < drawn) next();
}

}  // namespace ff
