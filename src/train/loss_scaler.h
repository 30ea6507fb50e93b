#pragma once
// Dynamic loss scaling for precision = fp16. fp16 keeps 5 exponent bits, so small gradients
// underflow when rounded to fp16 at a GEMM input; the loss (and with it every gradient) is
// multiplied by a scale S, and the gradients are divided by S again before clipping and AdamW.
// A step whose gradients overflowed (a non-finite global norm, which every rank computes alike
// because the norm is reduced over all of them) is skipped. The rule is Megatron-LM's
// DynamicGradScaler: on overflow the growth count restarts and a hysteresis counter drops by one,
// and the scale halves once it reaches 0; after `window` clean steps in a row the scale doubles
// and the hysteresis counter refills. With hysteresis 1 it is exactly PyTorch's GradScaler
// (backoff 0.5 on every overflow, growth 2 after growth_interval clean steps).
#include "ckpt/checkpoint_state.h"  // LossScaleState: what a checkpoint keeps of the scaler

namespace ff {

struct LossScaleConfig {
  float init = 65536.0f;  // 2^16
  int window = 2000;      // clean steps before the scale doubles
  int hysteresis = 2;     // overflows before the scale halves
};

class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& c) : c_(c), scale_(c.init), hysteresis_left_(c.hysteresis) {}
  float scale() const { return scale_; }
  // After a step: overflow = its gradients held an inf or NaN (the step was skipped).
  void update(bool overflow);
  LossScaleState state() const { return {scale_, clean_steps_, hysteresis_left_}; }
  void restore(const LossScaleState& s) { scale_ = s.scale, clean_steps_ = s.clean_steps, hysteresis_left_ = s.hysteresis_left; }

 private:
  LossScaleConfig c_;
  float scale_;
  int clean_steps_ = 0, hysteresis_left_;
};

}  // namespace ff
