#include "parallel/pipeline/stage_split.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace ff {

namespace {

// Costs are sums of a few doubles; two splits whose largest costs differ by less than this are
// equally good, so the sum-of-squares tie-break decides between them.
double tolerance(double x) { return 1e-9 * std::max(1.0, std::abs(x)); }

std::string fixed2(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

void validate(int n_layers, int ranks, int chunks, double embedding_cost, double head_cost) {
  auto fail = [](const std::string& why) { throw std::invalid_argument("stage split: " + why); };
  if (ranks < 1) fail("pipeline ranks p = " + std::to_string(ranks) + " must be >= 1");
  if (chunks < 1) fail("chunks per rank v = " + std::to_string(chunks) + " must be >= 1");
  for (double c : {embedding_cost, head_cost})
    if (!std::isfinite(c) || c < 0)
      fail("the embedding and head costs (" + std::to_string(embedding_cost) + ", " +
           std::to_string(head_cost) + ") must be finite and >= 0");
  const int stages = ranks * chunks;
  if (n_layers < stages)
    fail("n_layers L = " + std::to_string(n_layers) + " is fewer than the " + std::to_string(stages) +
         " virtual stages (p = " + std::to_string(ranks) + " ranks x v = " + std::to_string(chunks) +
         " chunks), and every stage needs at least one layer: lower p or v, or use a model with "
         "at least " + std::to_string(stages) + " layers");
}

}  // namespace

double StageSplit::max_cost() const {
  double m = 0;
  for (const PipelineStage& s : stages) m = std::max(m, s.cost);
  return m;
}

bool StageSplit::even() const {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const PipelineStage& s : stages) {
    lo = std::min(lo, s.cost);
    hi = std::max(hi, s.cost);
  }
  return stages.empty() || hi - lo <= tolerance(hi);
}

StageSplit split_stages(int n_layers, int ranks, int chunks, double embedding_cost, double head_cost) {
  validate(n_layers, ranks, chunks, embedding_cost, head_cost);
  const int S = ranks * chunks, L = n_layers;
  auto cost = [&](int s, int n) {
    return n + (s == 0 ? embedding_cost : 0.0) + (s == S - 1 ? head_cost : 0.0);
  };
  const double inf = std::numeric_limits<double>::infinity();
  // Two dynamic programs over (stages placed, blocks placed), O(S * L^2), instant at real sizes.
  // worst[s][l]: the least possible largest cost of stages 0..s-1 holding blocks [0, l).
  std::vector<std::vector<double>> worst(S + 1, std::vector<double>(L + 1, inf));
  worst[0][0] = 0;
  for (int s = 1; s <= S; ++s)
    for (int l = s; l <= L - (S - s); ++l)
      for (int n = 1; n <= l - (s - 1); ++n)
        worst[s][l] = std::min(worst[s][l], std::max(worst[s - 1][l - n], cost(s - 1, n)));
  // squares[s][l]: the least sum of squared costs under that optimum, and the block count `take`
  // of stage s-1 that reaches it. A minimax DP alone would return an arbitrary optimal split,
  // e.g. one that piles blocks onto stages that are not the bottleneck.
  const double limit = worst[S][L] + tolerance(worst[S][L]);
  std::vector<std::vector<double>> squares(S + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int>> take(S + 1, std::vector<int>(L + 1, 0));
  squares[0][0] = 0;
  for (int s = 1; s <= S; ++s)
    for (int l = s; l <= L - (S - s); ++l)
      for (int n = 1; n <= l - (s - 1); ++n) {
        const double c = cost(s - 1, n);
        if (c > limit || squares[s - 1][l - n] == inf) continue;
        if (const double q = squares[s - 1][l - n] + c * c; q < squares[s][l]) {
          squares[s][l] = q;
          take[s][l] = n;
        }
      }
  StageSplit out{ranks, chunks, std::vector<PipelineStage>(S)};
  for (int s = S, l = L; s > 0; --s) {
    const int n = take[s][l];
    out.stages[s - 1] = {l - n, l, s - 1 == 0, s - 1 == S - 1, cost(s - 1, n)};
    l -= n;
  }
  return out;
}

std::string describe_split(const StageSplit& split) {
  std::string out;
  double total = 0, lo = std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < split.stages.size(); ++s) {
    const PipelineStage& st = split.stages[s];
    std::string what;
    if (st.embedding) what += "embedding + ";
    what += st.last_layer - st.first_layer == 1
                ? "layer " + std::to_string(st.first_layer)
                : "layers " + std::to_string(st.first_layer) + "-" + std::to_string(st.last_layer - 1);
    if (st.head) what += " + head";
    out += "stage " + std::to_string(s) + " (rank " + std::to_string(int(s) % split.ranks) +
           ", chunk " + std::to_string(int(s) / split.ranks) + "): " + what + ", cost " +
           fixed2(st.cost) + "\n";
    total += st.cost;
    lo = std::min(lo, st.cost);
  }
  const double hi = split.max_cost();
  if (split.even()) return out + "even split: every stage costs " + fixed2(hi) + "\n";
  // Every stage waits for the slowest one each step, so mean / max is the busy fraction.
  const double busy = hi > 0 ? total / double(split.stages.size()) / hi : 1.0;
  return out + "uneven split: stage costs range from " + fixed2(lo) + " to " + fixed2(hi) +
         "; the pipeline moves at the slowest stage's pace, so stages are busy " +
         std::to_string(int(std::lround(100 * busy))) + "% of the time on average\n";
}

}  // namespace ff
