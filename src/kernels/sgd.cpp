#include "kernels/sgd.h"

namespace ff {

float sgd_shrink(float lr, float weight_decay, bool decay) {
  return decay ? static_cast<float>(1.0 - static_cast<double>(lr) * weight_decay) : 1.0f;
}

void sgd_update(float* param, const float* grad, size_t n, float lr, float weight_decay, bool decay) {
  scaled_step(param, param, grad, n, sgd_shrink(lr, weight_decay, decay), lr);
}

void scaled_step(float* out, const float* start, const float* dir, size_t n, float scale, float lr) {
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) out[i] = start[i] * scale - lr * dir[i];
}

void accumulate_scaled(float* acc, const float* grad, size_t n, float shrink, float ratio) {
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) acc[i] = acc[i] * shrink + ratio * grad[i];
}

void combine(float* out, const float* start, const float* dir, size_t n, float a, float lr) {
  const long long len = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < len; ++i) out[i] = start[i] * a + lr * dir[i];
}

}  // namespace ff
