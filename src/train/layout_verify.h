#pragma once
// `fivefold verify`: a layout trained side by side with the serial model on the same data, step
// by step, per-step loss and gradient-norm differences and the first step past tolerance (what
// torchtitan users script by hand; the parallel tests' serial comparison as a command).
#include <string>
#include <vector>

#include "comm/mesh.h"
#include "train/train_config.h"

namespace ff {

struct VerifyStep {
  int step;
  double loss, serial_loss, grad_norm, serial_grad_norm;
  double loss_diff() const;  // relative to the serial run's
  double norm_diff() const;
};

struct VerifyReport {
  std::vector<VerifyStep> steps;
  double tolerance = 1e-5;
  int first_bad_step = 0;  // 0: every step within tolerance
  std::string table() const;
};

// Collective over the mesh's ranks: every rank trains `cfg` (its layout, resolved against the
// mesh) for `steps` steps; rank 0 then trains the serial model on the same global batch (one
// rank, micro_batch x grad_accum x dp sequences per step split into the same micro-batches).
// inject_grad_scale != 1 multiplies the layout's reduced gradients by it (the selftest: an error
// the comparison must catch). The report is complete on rank 0; every rank gets first_bad_step.
VerifyReport verify_layout(const TrainConfig& cfg, const Mesh& mesh, int steps, double tolerance,
                           float inject_grad_scale);

}  // namespace ff
