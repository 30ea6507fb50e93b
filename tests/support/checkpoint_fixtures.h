#pragma once
// What the checkpoint-across-layouts tests share beside shared_data.h's copy_checkpoints: the
// comparison of the validation loss a loaded checkpoint gives with the saving run's.
#include <cmath>
#include <cstdio>
#include <string>

#include "comm/comm.h"
#include "shared_data.h"
#include "test_data.h"

namespace ff::testkit {

// 0 when the loaded validation loss is the saved one within 1e-5 relative (1 otherwise, NaN too).
inline int compare_val_loss(const char* what, double saved, double loaded) {
  const double d = std::fabs(loaded - saved) / saved;
  const bool ok = d <= 1e-5;  // false for NaN
  std::printf("%s: val loss %.7f saved, %.7f loaded, rel diff %.1e (tol 1e-5): %s\n", what, saved, loaded, d,
              ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace ff::testkit
