#pragma once
// What the checkpoint-across-layouts tests share beside shared_data.h's copy_checkpoints: the
// comparison of the validation loss a loaded checkpoint gives with the saving run's.
#include <cmath>
#include <cstdio>
#include <string>

#include "comm/comm.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "test_data.h"
#include "train/trainer.h"

namespace ff::testkit {

// Trains c to c.steps in `dir`, or, with a checkpoint there, loads it; returns the validation loss,
// NaN if a checkpoint was expected but not resumed (retraining from the same seed would otherwise
// pass for a good load) or resumed but not expected.
inline double train_or_load(const TrainConfig& c, const std::string& dir, const Mesh* mesh, bool expect_load) {
  Trainer t(c, dir, mesh);
  t.quiet = true;
  const bool loaded = t.step() == c.steps;
  t.run();  // a checkpoint loaded at its last step trains no further and saves as it was
  if (loaded != expect_load || (loaded && !t.history().empty())) return NAN;
  return t.evaluate();
}

// 0 when the loaded validation loss is the saved one within 1e-5 relative (1 otherwise, NaN too).
inline int compare_val_loss(const char* what, double saved, double loaded) {
  const double d = std::fabs(loaded - saved) / saved;
  const bool ok = d <= 1e-5;  // false for NaN
  std::printf("%s: val loss %.7f saved, %.7f loaded, rel diff %.1e (tol 1e-5): %s\n", what, saved, loaded, d,
              ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace ff::testkit
