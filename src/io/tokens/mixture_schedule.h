#pragma once
// Which source each sequence of a weighted mixture comes from, as a function of the sequence's
// global index alone. Sequence g goes to the source furthest below its share:
// argmax_i (w_i * (g + 1) - count_i), ties to the lowest index (the rule of Megatron's blended
// datasets). No randomness, so every rank and a resumed run agree, and no source is ever a
// whole sequence ahead of its share: count_i < w_i * g + 1 after any g draws.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ff {

class MixtureSchedule {
 public:
  // weights: positive and finite (normalised here to sum to 1).
  explicit MixtureSchedule(const std::vector<double>& weights);

  // The source of the next sequence; counts it.
  size_t next();
  // Back to the state after `drawn` sequences, by replaying the rule (O(drawn * sources)).
  void reset(uint64_t drawn);

  uint64_t drawn() const { return drawn_; }
  const std::vector<uint64_t>& counts() const { return counts_; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  std::vector<uint64_t> counts_;
  uint64_t drawn_ = 0;
};

}  // namespace ff
