#include "parallel/pipeline/pipeline_buffers.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ff {

BoundaryBuffer BoundaryPool::acquire(size_t n, BoundaryUse use) {
  if (n == 0) throw std::invalid_argument("pipeline boundary buffer of 0 floats");
  BoundaryBuffer b;
  b.use = use;
  if (auto it = free_.find(n); it != free_.end()) {
    b.memory = std::move(it->second);
    free_.erase(it);
  } else {
    // Communication staging, like ZeRO's: the model copies what it keeps into its own stash,
    // which is what the activations category counts.
    b.memory.allocate(n, MemCategory::workspace);
    stats_.allocated_floats += n;
  }
  int& now = stats_.in_use[size_t(use)];
  stats_.peak[size_t(use)] = std::max(stats_.peak[size_t(use)], ++now);
  const int total = std::accumulate(stats_.in_use.begin(), stats_.in_use.end(), 0);
  stats_.peak_total = std::max(stats_.peak_total, total);
  return b;
}

void BoundaryPool::release(BoundaryBuffer& b) {
  if (b.empty()) return;
  --stats_.in_use[size_t(b.use)];
  const size_t n = b.memory.size();
  free_.emplace(n, std::move(b.memory));
}

void BoundaryPool::reset_peaks() {
  stats_.peak = stats_.in_use;
  stats_.peak_total = std::accumulate(stats_.in_use.begin(), stats_.in_use.end(), 0);
}

}  // namespace ff
