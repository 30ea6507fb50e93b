#include "train/moe_training.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ckpt/full_tensors.h"

namespace ff {

void MoeTraining::place_experts(ModelParts& parts, const TrainConfig& c, const Mesh* mesh) {
  const int ep = mesh ? mesh->size(MeshGroup::ep) : 1;
  if (ep <= 1) return;
  parts.expert_count = c.model.moe.n_experts / ep;
  parts.expert_first = mesh->rank(MeshGroup::ep) * parts.expert_count;
}

MoeTraining::MoeTraining(Llama& model, const TrainConfig& c, const Mesh* mesh, Tracer* tracer)
    : model_(&model), cfg_(c), mesh_(mesh) {
  if (mesh && mesh->size(MeshGroup::ep) > 1) {
    ep_ = &mesh->group(MeshGroup::ep);
    const size_t routes = size_t(c.micro_batch) * size_t(c.model.seq_len) * size_t(c.model.moe.top_k);
    exchange_ = std::make_unique<AllToAllExperts>(*ep_, routes, c.model.dim, c.ep_overlap, tracer);
    model.set_expert_exchange(exchange_.get());
  }
}

void MoeTraining::begin_step(float grad_scale, double balance_weight) {
  model_->moe_stats().reset();
  if (exchange_) exchange_->reset_timing();
  balance_weight_ = balance_weight;
  model_->set_balance_weight(float(balance_weight));
  model_->set_loss_scale(grad_scale * float(balance_weight));
}

const MoeStepSummary& MoeTraining::finish_step() {
  const ModelConfig& mc = cfg_.model;
  const int E = mc.moe.n_experts, K = mc.moe.top_k;
  // Every rank lays out every MoE block (zeros for blocks another stage holds): E routed counts,
  // then tokens, dropped, aux and z sums.
  const std::vector<int> layers = parse_moe_layers(mc.moe.moe_layers, mc.n_layers);
  const size_t per = size_t(E) + 4;
  std::vector<double> buf(layers.size() * per, 0.0);
  const MoeStats& st = model_->moe_stats();
  for (size_t i = 0; i < layers.size(); ++i) {
    const MoeLayerStats& s = st.layers[size_t(layers[i])];
    if (s.routed.empty()) continue;
    double* b = buf.data() + i * per;
    std::copy(s.routed.begin(), s.routed.end(), b);
    b[E] = s.tokens, b[E + 1] = s.dropped, b[E + 2] = s.aux_sum, b[E + 3] = s.z_sum;
  }
  if (mesh_) {
    const Comm& over = mesh_->group({MeshAxis::dp, MeshAxis::cp, MeshAxis::pp});
    if (over.size() > 1) over.all_reduce(buf.data(), buf.size());
  }
  last_ = MoeStepSummary{};
  last_.layers = layers;
  for (size_t i = 0; i < layers.size(); ++i) {
    const double* b = buf.data() + i * per;
    const double tokens = std::max(b[E], 1.0);
    last_.routed.emplace_back(b, b + E);
    last_.aux.push_back(b[E + 2] / tokens);
    last_.z.push_back(b[E + 3] / tokens);
    last_.dropped.push_back(b[E + 1] / (tokens * K));
    const double mean = tokens * K / E, mx = *std::max_element(b, b + E);
    last_.imbalance = std::max(last_.imbalance, mx / mean);
    // DeepSeek-V3's aux-loss-free balancing: raise the bias of under-loaded experts, lower the
    // over-loaded ones', once per optimizer step from the whole step's counts (so gradient
    // accumulation and the layout do not change it). Every rank moves its copy the same way.
    float* bias = model_->router_bias(layers[i]);
    if (mc.moe.router_bias_update > 0 && bias)  // every block's, held or not: checkpoints save rank 0's
      for (int e = 0; e < E; ++e)
        bias[e] += mc.moe.router_bias_update * float((b[e] < mean) - (b[e] > mean));
  }
  return last_;
}

std::vector<float> MoeTraining::router_bias() const {
  const float* b = model_->router_bias(0);
  return std::vector<float>(b, b + size_t(cfg_.model.n_layers) * size_t(cfg_.model.moe.n_experts));
}

void MoeTraining::set_router_bias(const std::vector<float>& b) {
  if (b.empty()) return;
  if (b.size() != size_t(cfg_.model.n_layers) * size_t(cfg_.model.moe.n_experts))
    throw std::runtime_error("checkpoint: router_bias has the wrong length for this model");
  std::copy(b.begin(), b.end(), model_->router_bias(0));
}

nlohmann::json MoeTraining::metrics() const {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < last_.layers.size(); ++i)
    layers.push_back({{"layer", last_.layers[i]}, {"tokens_per_expert", last_.routed[i]},
                      {"aux_loss", last_.aux[i]}, {"z_loss", last_.z[i]}, {"dropped_fraction", last_.dropped[i]}});
  nlohmann::json m = {{"layers", layers}, {"imbalance", last_.imbalance}};
  if (exchange_)  // this rank's rows exchanges in the step: blocked on them vs in flight
    m["ep_exchange"] = {{"wait_ms", exchange_->timing().wait_us / 1e3}, {"comm_ms", exchange_->timing().comm_us / 1e3},
                        {"count", exchange_->timing().exchanges}};
  return m;
}

std::string MoeTraining::progress() const { return fmt::format(" | moe max/mean {:.2f}", last_.imbalance); }

void MoeTraining::assemble(std::vector<float>& x, const ParamLayout& all) const {
  if (!ep_) return;
  std::vector<float> out(all.total());
  assemble_experts(*ep_, model_->layout(), x.data(), all, out.data());
  x.swap(out);
}

}  // namespace ff
