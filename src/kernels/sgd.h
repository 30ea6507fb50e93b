#pragma once
// Plain SGD with AdamW's decoupled weight decay (optimizer = sgd), and the element-wise pieces the
// local data-parallel modes build their SGD steps from (parallel/data/sgd_displacement.h).
//
// This file is compiled with -ffp-contract=off (CMakeLists.txt): every product below rounds
// before it is added, so the same formula evaluated by two code paths (sync DP's step and local
// SGD's round end at H = 1) performs the same float operations and gives the same bits.
#include <cstddef>

namespace ff {

// The weight-decay factor of one step: 1 − lr·wd on decayed tensors (computed in double as
// AdamW's kernel does), 1 on the others.
float sgd_shrink(float lr, float weight_decay, bool decay);

// param ← param·shrink − lr·grad: SGD with decoupled weight decay.
void sgd_update(float* param, const float* grad, size_t n, float lr, float weight_decay, bool decay);

// out ← start·scale − lr·dir (out may be start).
void scaled_step(float* out, const float* start, const float* dir, size_t n, float scale, float lr);

// acc ← acc·shrink + ratio·grad.
void accumulate_scaled(float* acc, const float* grad, size_t n, float shrink, float ratio);

// out ← start·a + lr·dir.
void combine(float* out, const float* start, const float* dir, size_t n, float a, float lr);

}  // namespace ff
