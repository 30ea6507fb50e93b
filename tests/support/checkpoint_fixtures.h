#pragma once
// What the checkpoint-across-layouts tests share: a copy of a run's checkpoint in a fresh folder,
// and the comparison of the validation loss a loaded checkpoint gives with the saving run's.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "comm/comm.h"
#include "shared_data.h"
#include "test_data.h"
#include "train/checkpoint.h"

namespace ff::testkit {

// Rank 0 copies the checkpoint of the run in `from`; every rank gets the new folder's path.
inline std::string copy_checkpoint(const Comm& world, const std::string& from) {
  namespace fs = std::filesystem;
  std::string dir;
  if (world.rank() == 0) {
    dir = temp_dir("load");
    fs::copy_file(fs::path(from) / checkpoint_file_name(), fs::path(dir) / checkpoint_file_name());
  }
  dir = broadcast_string(world, dir);
  world.barrier();
  return dir;
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
