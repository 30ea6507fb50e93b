#include "parallel/data/diloco.h"

#include <cstring>

#include "comm/comm.h"
#include "kernels/adamw.h"

namespace ff {

DilocoState::DilocoState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
                         const DataParallelConfig& cfg, Tracer* tracer)
    : LocalReplicaState(spec, model, adam, cfg, tracer, /*local_mean=*/true),
      global_(size(), MemCategory::optimizer),
      momentum_(size(), MemCategory::optimizer),
      delta_(size(), MemCategory::workspace),
      delta16_(cfg.mode.pseudo_grad == DType::bf16 ? size() : 0, MemCategory::workspace) {
  std::memset(momentum_.data(), 0, momentum_.bytes());
}

void DilocoState::on_parameters_set() {
  // A fresh start or a checkpoint: the replica's parameters are the global ones (a checkpoint's
  // outer state, if it has one, is loaded over these afterwards).
  std::memcpy(global_.data(), param_data(), global_.bytes());
}

void DilocoState::mean_over_dp(float* x) {
  const size_t n = size();
  if (delta16_.size() > 0) {
    uint16_t* h = delta16_.data();
    for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(x[i]);
    dp().all_reduce(CommPtr(h, CommType::bf16), n);
    for (size_t i = 0; i < n; ++i) x[i] = bf16_to_f32(h[i]);
  } else {
    dp().all_reduce(x, n);
  }
  scale_inplace(x, n, 1.0f / float(dp().size()));
}

void DilocoState::average_pseudo_gradient() {
  if (SgdDisplacement* sgd_steps = sgd()) {
    mean_over_dp(sgd_steps->acc());
    sgd_steps->pseudo_gradient(delta_.data(), global_.data(), sgd_steps->acc());
    sgd_steps->begin_round();
    return;
  }
  const size_t n = size();
  const float* local = param_data();
  float* d = delta_.data();
  for (size_t i = 0; i < n; ++i) d[i] = global_[i] - local[i];
  mean_over_dp(d);
}

void DilocoState::after_local_step(int step) {
  if (step % mode().sync_every != 0) return;
  average_pseudo_gradient();
  const size_t n = size();
  const float lr = mode().outer_lr, mu = mode().outer_momentum;
  float *g = global_.data(), *m = momentum_.data(), *p = param_data();
  const float* d = delta_.data();
  for (size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + d[i];
    g[i] -= lr * (d[i] + mu * m[i]);  // Nesterov, as torch.optim.SGD(nesterov=True)
    p[i] = g[i];
  }
}

}  // namespace ff
