#include "train/loss_scaler.h"

namespace ff {

void LossScaler::update(bool overflow) {
  if (overflow) {
    clean_steps_ = 0;
    if (--hysteresis_left_ <= 0) scale_ *= 0.5f;  // a power of two: unscaling stays exact
    return;
  }
  if (++clean_steps_ == c_.window) {
    clean_steps_ = 0;
    hysteresis_left_ = c_.hysteresis;
    scale_ *= 2.0f;
  }
}

}  // namespace ff
