#pragma once
// Which decoder blocks each pipeline stage holds. A pipeline runs at the pace of its slowest
// stage, so the split minimises the largest stage cost. The embedding (on virtual stage 0) and the
// final norm + LM head + loss (on the last virtual stage) are priced in decoder-block units by the
// caller, so a large vocabulary moves blocks away from the last stage. Virtual stage s lives on
// rank s % p as chunk s / p (pipeline_schedule.h).
#include <string>
#include <vector>

namespace ff {

struct PipelineStage {
  int first_layer = 0;  // decoder blocks [first_layer, last_layer)
  int last_layer = 0;
  bool embedding = false;  // virtual stage 0
  bool head = false;       // last virtual stage: final norm, LM head, loss
  double cost = 0;         // blocks + the embedding/head costs it carries
};

struct StageSplit {
  int ranks = 0;                      // p
  int chunks = 0;                     // v
  std::vector<PipelineStage> stages;  // p * v, indexed by virtual stage
  double max_cost() const;
  // Every stage costs the same (to rounding); otherwise the faster stages idle for the slowest.
  bool even() const;
};

// Minimises the largest stage cost; among the splits that reach it, takes the one with the least
// sum of squared costs (the most even rest). Each stage gets at least one block. Throws
// std::invalid_argument naming the numbers if n_layers < ranks * chunks, a count is < 1, or a cost
// is negative or not finite.
StageSplit split_stages(int n_layers, int ranks, int chunks, double embedding_cost, double head_cost);

// One line per stage, "stage 0 (rank 0, chunk 0): embedding + layers 0-2, cost 3.40", then a line
// saying whether the split is even and, if not, how much of the pipeline's pace it costs.
std::string describe_split(const StageSplit& split);

}  // namespace ff
