#pragma once
// Local SGD: each replica takes sync_every = H optimizer steps on its own batch, then the
// parameters are averaged over dp. Each replica keeps its own AdamW moments (they are never
// averaged: Lin et al. average only the model). Communication: Ψ floats every H steps instead of
// every step.
#include "parallel/data/local_replica_state.h"

namespace ff {

class LocalSgdState final : public LocalReplicaState {
 public:
  LocalSgdState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
                const DataParallelConfig& cfg, Tracer* tracer)
      : LocalReplicaState(spec, model, adam, cfg, tracer, /*local_mean=*/true) {}

 protected:
  void after_local_step(int step) override;
};

}  // namespace ff
