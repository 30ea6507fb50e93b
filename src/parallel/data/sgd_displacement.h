#pragma once
// A replica's local SGD steps carried as a displacement from the round's start θ₀ (local SGD and
// DiLoCo with optimizer = sgd):
//   θ_t = S_t·θ₀ − λ·A_t,   A ← shrink_t·A + (lr_t/λ)·g_t,   S ← shrink_t·S   (A₀ = 0, S₀ = 1),
// with shrink_t = 1 − lr_t·wd (decoupled weight decay, decayed tensors only) and λ the round's first
// nonzero lr. In exact arithmetic this is step-by-step SGD. In floats it keeps the replica's update
// apart from θ₀: averaging A over the replicas averages their updates, where averaging θ_local (or
// θ₀ − θ_local) first rounds each update onto θ's grid, half an ulp of θ per replica, and then
// rounds the mean again. At H = 1, A = g and λ = lr exactly, so the round's end performs sync DP's
// float operations, θ₀·shrink − lr·mean(g), and equals it bitwise (no H = 1 special case).
#include <vector>

#include "core/memory.h"
#include "parallel/optimizer.h"

namespace ff {

class SgdDisplacement {
 public:
  SgdDisplacement(std::vector<OptimSpan> spans, size_t size, float weight_decay);
  void begin_round();  // A = 0, S = 1, λ unset
  // One local step on grads: accumulates it into A and writes θ_t into params.
  void step(float* params, const float* start, const float* grads, float lr);
  // out ← S·start − λ·mean_acc: the mean of the replicas' θ_t given the mean of their A.
  void mean_params(float* out, const float* start, const float* mean_acc) const;
  // out ← (1 − S)·start + λ·mean_acc: θ₀ − mean(θ_t), DiLoCo's pseudo-gradient.
  void pseudo_gradient(float* out, const float* start, const float* mean_acc) const;
  float* acc() { return acc_.data(); }
  size_t size() const { return acc_.size(); }

 private:
  float scale(bool decay) const { return decay ? scale_decay_ : 1.0f; }
  std::vector<OptimSpan> spans_;  // param_at == state_at: a whole replica
  float weight_decay_;
  TrackedBuffer<float> acc_;      // A, in gradient units (optimizer category)
  float scale_decay_ = 1.0f;      // S of the decayed tensors (the others keep 1)
  float ref_lr_ = 0.0f;           // λ (0 until the round's first step with lr > 0)
};

}  // namespace ff
