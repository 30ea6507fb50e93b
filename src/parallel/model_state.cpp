#include "parallel/model_state.h"

#include <stdexcept>

#include "parallel/data/local_replica_state.h"
#include "parallel/grouped_state.h"
#include "parallel/param_group.h"

namespace ff {

const EnumTable<GradSync>& grad_sync_names() {
  static const EnumTable<GradSync> names{{GradSync::overlap, "overlap", "with backward"},
                                         {GradSync::after_backward, "after_backward"},
                                         {GradSync::none, "none", "benchmarks only: replicas drift"}};
  return names;
}

std::unique_ptr<ModelState> make_model_state(const ParamLayout& layout,
                                             const AdamWConfig& adam, const DataParallelConfig& cfg,
                                             const Mesh* mesh, Tracer* tracer,
                                             const std::vector<ReplicaRange>& replicas) {
  if (cfg.zero < 0 || cfg.zero > 3)
    throw std::runtime_error("zero must be 0, 1, 2 or 3 (got " + std::to_string(cfg.zero) + ")");
  if (cfg.sync != GradSync::overlap && cfg.zero != 0)
    throw std::runtime_error("grad_sync other than overlap is a DDP (zero 0) benchmarking setting");
  if (cfg.mode.mode != DpMode::sync)
    return make_dp_mode_state(model_param_groups(layout, mesh, replicas), layout, adam, cfg, tracer);
  return std::make_unique<GroupedState>(model_param_groups(layout, mesh, replicas), &layout, adam, cfg,
                                        tracer);
}

}  // namespace ff
