#pragma once
// For tests under mpirun: rank 0 prepares the tiny data folder and every rank learns its path.
#include <cstdint>
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

}  // namespace ff::testkit
