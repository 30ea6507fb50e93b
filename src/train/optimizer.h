#pragma once
// AdamW over the flat parameter buffer. The moments share the parameters' layout, so a
// checkpoint is three equal-sized sections and a ZeRO shard is an offset range of all three.
#include "core/memory.h"
#include "kernels/adamw.h"
#include "model/parameters.h"

namespace ff {

struct AdamWConfig {
  float beta1, beta2, eps, weight_decay;
};

class AdamW {
 public:
  AdamW(const ParamLayout& layout, AdamWConfig cfg);
  // step is 1-based (bias correction). Norm weights are not decayed.
  void step(float* params, const float* grads, float lr, int step);
  float* m() { return m_.data(); }
  float* v() { return v_.data(); }
  size_t size() const { return m_.size(); }

 private:
  const ParamLayout& layout_;
  AdamWConfig cfg_;
  TrackedBuffer<float> m_, v_;
};

}  // namespace ff
