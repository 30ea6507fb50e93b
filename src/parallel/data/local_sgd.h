#pragma once
// Local SGD: each replica takes sync_every = H optimizer steps on its own batch, then the
// parameters are averaged over dp. Each replica keeps its own AdamW moments (they are never
// averaged: Lin et al. average only the model). Communication: Ψ floats every H steps instead of
// every step. With optimizer = sgd each replica carries its steps as a displacement from the
// round's start and the displacements are averaged (sgd_displacement.h): the same mean, rounded
// once, so that H = 1 is sync DP bitwise.
#include "core/memory.h"
#include "parallel/data/local_replica_state.h"

namespace ff {

class LocalSgdState final : public LocalReplicaState {
 public:
  LocalSgdState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
                const DataParallelConfig& cfg, Tracer* tracer)
      : LocalReplicaState(spec, model, adam, cfg, tracer, /*local_mean=*/true),
        start_(sgd() ? size() : 0, MemCategory::optimizer) {}

 protected:
  void after_local_step(int step) override;
  void on_parameters_set() override;
  const float* round_start() override { return start_.data(); }

 private:
  TrackedBuffer<float> start_;  // θ₀ of the round (optimizer = sgd only: sgd_displacement.h)
};

}  // namespace ff
