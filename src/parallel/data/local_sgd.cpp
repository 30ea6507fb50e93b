#include "parallel/data/local_sgd.h"

#include <cstring>

#include "comm/comm.h"
#include "kernels/adamw.h"

namespace ff {

void LocalSgdState::after_local_step(int step) {
  if (step % mode().sync_every != 0) return;
  const float inv_dp = 1.0f / float(dp().size());
  if (SgdDisplacement* d = sgd()) {
    dp().all_reduce(d->acc(), size());
    scale_inplace(d->acc(), size(), inv_dp);
    d->mean_params(start_.data(), start_.data(), d->acc());
    std::memcpy(param_data(), start_.data(), start_.bytes());
    d->begin_round();
    return;
  }
  dp().all_reduce(param_data(), size());
  scale_inplace(param_data(), size(), inv_dp);
}

void LocalSgdState::on_parameters_set() {
  if (sgd()) std::memcpy(start_.data(), param_data(), start_.bytes());
}

}  // namespace ff
