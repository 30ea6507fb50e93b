#include "parallel/tensor/regions.h"

namespace ff::regions {

void copy_to_tp_backward(const Comm& tp, float* grad, size_t n) { tp.all_reduce(grad, n); }

void reduce_from_tp_forward(const Comm& tp, float* x, size_t n) { tp.all_reduce(x, n); }

void gather_from_sp_forward(const Comm& tp, ConstTypedPtr shard, TypedPtr full, size_t n_full) {
  tp.all_gather(shard, full, n_full);
}

float* gather_from_sp_backward(const Comm& tp, float* grad_full, size_t n_full) {
  float* mine = grad_full + chunk_range(n_full, tp.size(), tp.rank()).offset;
  tp.reduce_scatter(grad_full, mine, n_full);
  return mine;
}

float* reduce_scatter_to_sp_forward(const Comm& tp, float* x_full, size_t n_full) {
  return gather_from_sp_backward(tp, x_full, n_full);  // the same collective, the other way round
}

void reduce_scatter_to_sp_backward(const Comm& tp, const float* grad_shard, float* grad_full,
                                   size_t n_full) {
  tp.all_gather(grad_shard, grad_full, n_full);
}

}  // namespace ff::regions
