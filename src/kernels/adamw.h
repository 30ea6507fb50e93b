#pragma once
// Fused AdamW (Loshchilov & Hutter), as PyTorch's torch.optim.AdamW: decoupled weight decay
// p -= lr*wd*p, then the bias-corrected Adam step.
#include <cstddef>

namespace ff {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int step;  // 1-based, for bias correction
};

// Over n elements; `decay` says whether weight decay applies to this span.
void adamw_update(float* param, const float* grad, float* m, float* v, size_t n,
                  const AdamWHyper& h, bool decay);

// Global L2 norm over a flat gradient (double accumulation, deterministic for a fixed thread
// count).
double l2_norm(const float* x, size_t n);
void scale_inplace(float* x, size_t n, float s);

}  // namespace ff
