#include "parallel/data/local_replica_state.h"

#include <stdexcept>

#include "comm/comm.h"
#include "kernels/adamw.h"
#include "parallel/data/async_dp.h"
#include "parallel/data/diloco.h"
#include "parallel/data/local_sgd.h"

namespace ff {

namespace {
DataParallelConfig without_gradient_sync(DataParallelConfig cfg) {
  cfg.sync = GradSync::none;  // the inner state's sink all-reduces nothing
  return cfg;
}
}  // namespace

LocalReplicaState::LocalReplicaState(const ParamGroupSpec& spec, const ParamLayout* model,
                                     const AdamWConfig& adam, const DataParallelConfig& cfg, Tracer* tracer,
                                     bool local_mean)
    : layout_(std::make_unique<GroupLayout>(spec, model)),
      dp_(spec.comm),
      mode_(cfg.mode),
      local_mean_(local_mean),
      inner_(std::make_unique<ReplicatedState>(*layout_, adam, without_gradient_sync(cfg), spec.comm,
                                               tracer)) {
  if (adam.kind == OptimizerKind::sgd && cfg.mode.mode != DpMode::async)
    sgd_ = std::make_unique<SgdDisplacement>(full_group_spans(*layout_), layout_->total(), adam.weight_decay);
}

void LocalReplicaState::finish_grads() {
  inner_->finish_grads();
  if (local_mean_) scale_inplace(grad_data(), size(), float(dp_->size()));
}

void LocalReplicaState::optimizer_step(float lr, int step) {
  if (sgd_)
    sgd_->step(param_data(), round_start(), grad_data(), lr);
  else
    inner_->optimizer_step(lr, step);
  after_local_step(step);
}

void LocalReplicaState::init_parameters(const ModelConfig& c, uint64_t seed) {
  inner_->init_parameters(c, seed);
  parameters_set();
}

void LocalReplicaState::parameters_set() {
  if (sgd_) sgd_->begin_round();  // a new round starts from these parameters
  on_parameters_set();
}

std::unique_ptr<ModelState> make_dp_mode_state(const std::vector<ParamGroupSpec>& groups,
                                               const ParamLayout& model, const AdamWConfig& adam,
                                               const DataParallelConfig& cfg, Tracer* tracer) {
  const char* name = dp_mode_name(cfg.mode.mode);
  if (cfg.zero != 0)
    throw std::runtime_error(std::string("dp_mode = ") + name + " keeps a whole optimizer state per replica; "
                             "it does not compose with zero = " + std::to_string(cfg.zero) + ": set zero = 0");
  if (groups.size() != 1 || !groups[0].replicas.empty() || groups[0].kind != ParamGroupKind::dense)
    throw std::runtime_error(std::string("dp_mode = ") + name + " needs one dense parameter group over dp "
                             "(tp = pp = cp = 1, no experts); use dp_mode = sync with other layouts");
  if (!groups[0].comm || groups[0].comm->size() < 2)
    throw std::runtime_error(std::string("dp_mode = ") + name + " needs dp >= 2 replicas; run more ranks "
                             "(mpirun -np 2) or use dp_mode = sync");
  return make_dp_mode_group_state(groups[0], &model, adam, cfg, tracer);
}

std::unique_ptr<ModelState> make_dp_mode_group_state(const ParamGroupSpec& spec, const ParamLayout* model,
                                                     const AdamWConfig& adam, const DataParallelConfig& cfg,
                                                     Tracer* tracer) {
  switch (cfg.mode.mode) {
    case DpMode::local_sgd: return std::make_unique<LocalSgdState>(spec, model, adam, cfg, tracer);
    case DpMode::diloco: return std::make_unique<DilocoState>(spec, model, adam, cfg, tracer);
    case DpMode::async: return std::make_unique<AsyncState>(spec, model, adam, cfg, tracer);
    case DpMode::sync: break;
  }
  throw std::logic_error("make_dp_mode_group_state: dp_mode = sync has no mode state");
}

}  // namespace ff
