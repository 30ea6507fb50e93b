#pragma once
// What a training run with MoE blocks adds to the trainer: where this rank's experts are (expert
// parallelism), the all-to-all exchange handed to the model, the routing statistics of each step
// summed over the ranks (tokens per expert, dropped routes, aux and z losses: metrics.jsonl and
// the progress line), the aux-loss-free router bias update, and the experts' part of checkpoint
// assembly. A dense run has none of it (the trainer holds no MoeTraining).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/mesh.h"
#include "model/llama.h"
#include "parallel/expert/all_to_all_experts.h"
#include "train/train_config.h"

namespace ff {

// One step's routing over every rank, per MoE block (global layer order).
struct MoeStepSummary {
  std::vector<int> layers;                  // the MoE blocks
  std::vector<std::vector<double>> routed;  // tokens routed to each expert (before dropping)
  std::vector<double> aux, z;               // the step's mean balancing losses
  std::vector<double> dropped;              // fraction of routes dropped for capacity
  double imbalance = 0;                     // worst block's max / mean tokens per expert
};

class MoeTraining {
 public:
  // This rank's experts under expert parallelism (ep rank r of n holds n_experts / n from r on).
  static void place_experts(ModelParts& parts, const TrainConfig& c, const Mesh* mesh);
  // model: built with the parts place_experts set; mesh null: one process.
  // tracer (may be null): the ep exchanges' spans.
  MoeTraining(Llama& model, const TrainConfig& c, const Mesh* mesh, Tracer* tracer = nullptr);
  // grad_scale: the token losses'; balance_weight: targets / tokens of the global batch (1 without
  // a loss mask), which keeps the balancing losses a mean over every routed token.
  void begin_step(float grad_scale, double balance_weight);
  // This rank's share of the balancing losses, weighted to add to its sum of token losses.
  double local_loss_sum() const { return model_->moe_stats().loss_sum() * balance_weight_; }
  // Sums the step's statistics over dp, cp and pp (collective) and moves the router bias.
  const MoeStepSummary& finish_step();
  const MoeStepSummary& last() const { return last_; }
  nlohmann::json metrics() const;
  // The router selection bias of every block (n_layers x n_experts; the same on every rank), for
  // checkpoints.
  std::vector<float> router_bias() const;
  void set_router_bias(const std::vector<float>& b);
  std::string progress() const;  // " | moe max/mean 1.31"
  // This rank's flat buffer (its experts) -> `all`: the same parts and tensor slices with every
  // expert (collective over ep).
  void assemble(std::vector<float>& x, const ParamLayout& all) const;
  // `parts` with every expert.
  static ModelParts all_experts(ModelParts parts) {
    parts.expert_first = 0, parts.expert_count = -1;
    return parts;
  }

 private:
  Llama* model_;
  TrainConfig cfg_;
  const Mesh* mesh_;
  const Comm* ep_ = nullptr;
  std::unique_ptr<AllToAllExperts> exchange_;
  MoeStepSummary last_;
  double balance_weight_ = 1;
};

}  // namespace ff
