#pragma once
// For tests under mpirun: rank 0 prepares the tiny data folder and every rank learns its path.
#include <cstdint>
#include <filesystem>
#include <string>

#include "comm/comm.h"
#include "test_data.h"

namespace ff::testkit {

inline std::string broadcast_string(const Comm& comm, std::string s) {
  int64_t n = int64_t(s.size());
  comm.broadcast(&n, 1, 0);
  s.resize(size_t(n));
  comm.broadcast(reinterpret_cast<uint8_t*>(s.data()), size_t(n), 0);
  return s;
}

inline std::string shared_tiny_data_dir(const Comm& world) {
  return broadcast_string(world, world.rank() == 0 ? tiny_data_dir() : std::string());
}
inline std::string shared_masked_data_dir(const Comm& world) {
  return broadcast_string(world, world.rank() == 0 ? tiny_masked_data_dir() : std::string());
}

// A copy of a run's checkpoints (its step_N folders and the `latest` pointer) in a fresh folder,
// so a resumed run cannot write over what another case loads next. Rank 0 copies; every rank of
// `world` gets the path once the copy is complete.
inline std::string copy_checkpoints(const Comm& world, const std::string& from) {
  namespace fs = std::filesystem;
  std::string dir;
  if (world.rank() == 0) {
    dir = temp_dir("load");
    for (const auto& e : fs::directory_iterator(from))
      if (e.path().filename() == "latest" || e.path().filename().string().rfind("step_", 0) == 0)
        fs::copy(e.path(), fs::path(dir) / e.path().filename(), fs::copy_options::recursive);
  }
  dir = broadcast_string(world, dir);
  world.barrier();
  return dir;
}

}  // namespace ff::testkit
