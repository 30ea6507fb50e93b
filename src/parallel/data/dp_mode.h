#pragma once
// How data-parallel replicas agree. sync is DDP: every step all-reduces gradients, so
// training equals one device's. The others trade that equality for fewer or later waits:
//   local_sgd: each replica takes sync_every = H optimizer steps on its own gradients, then the
//              parameters are averaged over dp (Lin et al. 2020, "Don't use large mini-batches").
//   diloco:    H inner AdamW steps, then an outer Nesterov step on the averaged pseudo-gradient
//              Δ = θ_global − mean(θ_local) (Douillard et al. 2023).
//   async:     bounded staleness s: the gradient of step t is all-reduced in the background and
//              applied at step t + s, so a replica runs up to s steps ahead of the slowest.
#include "core/dtype.h"
#include "core/enum_table.h"

namespace ff {

enum class DpMode { sync, local_sgd, diloco, async };
const EnumTable<DpMode>& dp_mode_names();
inline const char* dp_mode_name(DpMode m) { return dp_mode_names().name(m); }
// diloco_pseudo_grad_dtype: fp32 | bf16 (the all-reduce of Δ then moves half the bytes).
const EnumTable<DType>& pseudo_grad_dtype_names();

struct DpModeConfig {
  DpMode mode = DpMode::sync;
  int sync_every = 1;            // H: local steps between averagings (local_sgd, diloco)
  float outer_lr = 0.7f;         // diloco's outer Nesterov step
  float outer_momentum = 0.9f;
  DType pseudo_grad = DType::f32;
  int max_staleness = 0;         // async: s
};

}  // namespace ff
