#pragma once
// The wall clock calibrate times its measurements with.
#include <chrono>

namespace ff {

using calibrate_clock = std::chrono::steady_clock;

// Seconds on calibrate_clock since t0.
inline double seconds_since(calibrate_clock::time_point t0) {
  return std::chrono::duration<double>(calibrate_clock::now() - t0).count();
}

}  // namespace ff
