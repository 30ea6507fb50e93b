#pragma once
// The pipeline executor's stage-boundary buffers: received activations and gradients, and the
// outputs in transit to a neighbour. Kept in a pool so a step reuses the previous step's memory,
// and counted by use, so a test can read off how many activations a schedule keeps alive.
#include <array>
#include <cstddef>
#include <map>

#include "core/memory.h"

namespace ff {

enum class BoundaryUse : int {
  activation_in = 0,  // received activation; held until its microbatch-chunk's backward is done
  activation_out,     // forward output in transit to the next stage
  gradient_in,        // received output gradient; held until its backward (and W) is done
  gradient_out,       // backward's input gradient in transit to the previous stage
  count
};
constexpr int kBoundaryUses = int(BoundaryUse::count);

struct BoundaryPoolStats {
  std::array<int, kBoundaryUses> in_use{};  // buffers per use now
  std::array<int, kBoundaryUses> peak{};    // ... and at most, since construction or reset_peaks
  int peak_total = 0;                       // buffers of all uses at once, at most
  size_t allocated_floats = 0;              // the pool's memory (in use + free); it only grows
  int in_use_of(BoundaryUse u) const { return in_use[size_t(u)]; }
  int peak_of(BoundaryUse u) const { return peak[size_t(u)]; }
};

// One buffer handed out by the pool; move-only, empty when default-constructed.
struct BoundaryBuffer {
  TrackedBuffer<float> memory;
  BoundaryUse use = BoundaryUse::activation_in;
  float* data() { return memory.data(); }
  bool empty() const { return memory.size() == 0; }
};

class BoundaryPool {
 public:
  // n >= 1 floats, contents unspecified (a reused buffer keeps its old values).
  BoundaryBuffer acquire(size_t n, BoundaryUse use);
  // Returns b's memory to the pool; an empty b is ignored.
  void release(BoundaryBuffer& b);
  const BoundaryPoolStats& stats() const { return stats_; }
  void reset_peaks();

 private:
  std::multimap<size_t, TrackedBuffer<float>> free_;  // by size: every boundary of a model is
                                                      // usually the same (B, T, C)
  BoundaryPoolStats stats_;
};

}  // namespace ff
