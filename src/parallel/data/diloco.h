#pragma once
// DiLoCo (Douillard et al. 2023): H inner AdamW steps per replica, then one outer step shared by
// all: the pseudo-gradient Δ = θ_global − mean(θ_local) (pointing uphill, like a gradient: the
// replicas moved downhill from θ_global) drives Nesterov momentum,
//   m ← μ·m + Δ,   θ_global ← θ_global − lr_outer·(Δ + μ·m),
// and every replica restarts from θ_global. The inner AdamW moments stay per replica. θ_global
// and m are the outer state: replicated, and kept in checkpoints. Δ may travel as bf16 (the
// all-reduce accumulates in fp32 and rounds once), halving the bytes. With optimizer = sgd the
// replicas average their displacements instead and Δ is formed from the mean once
// (sgd_displacement.h): with outer lr 1 and no momentum, H = 1 is then sync DP bitwise.
#include "core/memory.h"
#include "parallel/data/local_replica_state.h"

namespace ff {

class DilocoState final : public LocalReplicaState {
 public:
  DilocoState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
              const DataParallelConfig& cfg, Tracer* tracer);
  std::vector<std::pair<std::string, float*>> extra_state() override {
    return {{"diloco_global", global_.data()}, {"diloco_momentum", momentum_.data()}};
  }
  const float* global_params() const { return global_.data(); }

 protected:
  void after_local_step(int step) override;
  void on_parameters_set() override;
  const float* round_start() override { return global_.data(); }

 private:
  void average_pseudo_gradient();  // delta_ := mean over dp of θ_global − θ_local
  void mean_over_dp(float* x);     // in place, through bf16 if diloco_pseudo_grad_dtype says so

  TrackedBuffer<float> global_, momentum_;  // the outer state (optimizer category)
  TrackedBuffer<float> delta_;              // Δ (workspace)
  TrackedBuffer<uint16_t> delta16_;         // Δ in bf16 for the wire (empty with fp32)
};

}  // namespace ff
