#include "parallel/data/local_sgd.h"

#include "comm/comm.h"
#include "kernels/adamw.h"

namespace ff {

void LocalSgdState::after_local_step(int step) {
  if (step % mode().sync_every != 0) return;
  dp().all_reduce(param_data(), size());
  scale_inplace(param_data(), size(), 1.0f / float(dp().size()));
}

}  // namespace ff
