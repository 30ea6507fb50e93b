#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011). A value is a pure function
// of (key, counter), so any shard of a tensor can draw exactly its own elements, and every
// parallel layout starts from the same weights (principle 8, docs/principles.md).
#include <cstdint>
#include <string_view>

namespace ff {

struct Philox {
  // Four 32-bit outputs for one 128-bit counter under a 64-bit key.
  static void block(uint64_t key, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4]);
};

// FNV-1a: stable across platforms and runs, unlike std::hash.
uint64_t stable_hash(std::string_view s);

// Uniform in (0, 1], never 0 so log() is safe.
float uniform01(uint64_t key, uint64_t stream, uint64_t index);
// Standard normal by Box-Muller on the element's own counter.
float normal01(uint64_t key, uint64_t stream, uint64_t index);

// A sequential generator for sampling and shuffling: a counter that advances, so its whole state
// is two integers and is saved in checkpoints.
struct RngState {
  uint64_t seed = 0;
  uint64_t counter = 0;
  uint32_t next_u32();
  float next_uniform01();
  uint64_t next_below(uint64_t n);  // uniform integer in [0, n)
};

}  // namespace ff
