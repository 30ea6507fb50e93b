#include "parallel/data/sgd_displacement.h"

#include <cstring>

#include "kernels/sgd.h"

namespace ff {

SgdDisplacement::SgdDisplacement(std::vector<OptimSpan> spans, size_t size, float weight_decay)
    : spans_(std::move(spans)), weight_decay_(weight_decay), acc_(size, MemCategory::optimizer) {
  begin_round();
}

void SgdDisplacement::begin_round() {
  std::memset(acc_.data(), 0, acc_.bytes());
  scale_decay_ = 1.0f;
  ref_lr_ = 0.0f;
}

void SgdDisplacement::step(float* params, const float* start, const float* grads, float lr) {
  if (ref_lr_ == 0.0f) ref_lr_ = lr;
  if (ref_lr_ == 0.0f) return;  // lr 0 moves nothing: θ stays θ₀, A stays 0
  const float ratio = lr / ref_lr_;  // exactly 1 at the round's first step
  for (const OptimSpan& s : spans_) {
    const float shrink = sgd_shrink(lr, weight_decay_, s.decay);
    accumulate_scaled(acc_.data() + s.state_at, grads + s.state_at, s.count, shrink, ratio);
  }
  scale_decay_ *= sgd_shrink(lr, weight_decay_, true);
  mean_params(params, start, acc_.data());  // this replica's θ_t: the mean over one replica
}

void SgdDisplacement::mean_params(float* out, const float* start, const float* mean_acc) const {
  for (const OptimSpan& s : spans_)
    scaled_step(out + s.param_at, start + s.param_at, mean_acc + s.state_at, s.count, scale(s.decay),
                ref_lr_);
}

void SgdDisplacement::pseudo_gradient(float* out, const float* start, const float* mean_acc) const {
  for (const OptimSpan& s : spans_)
    combine(out + s.param_at, start + s.param_at, mean_acc + s.state_at, s.count, 1.0f - scale(s.decay),
            ref_lr_);
}

}  // namespace ff
