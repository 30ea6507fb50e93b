#include "comm/scratch_pool.h"

#include <algorithm>
#include <stdexcept>

namespace ff::detail {

std::byte* ScratchPool::take(size_t bytes) {
  // Smallest free buffer that fits; the pool only ever holds a handful.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
  }
  if (best == free_.end()) {
    // Default-initialised: the first use overwrites it, so zeroing would be wasted work.
    lent_.push_back({bytes, std::unique_ptr<std::byte[]>(new std::byte[bytes])});
  } else {
    lent_.push_back(std::move(*best));
    free_.erase(best);
  }
  return lent_.back().data.get();
}

void ScratchPool::give(std::byte* buffer) {
  auto it = std::find_if(lent_.begin(), lent_.end(),
                         [&](const Buffer& b) { return b.data.get() == buffer; });
  if (it == lent_.end()) throw std::logic_error("ScratchPool::give: buffer was not lent by this pool");
  free_.push_back(std::move(*it));
  lent_.erase(it);
}

void ScratchPool::clear() {
  free_.clear();
  lent_.clear();
}

size_t ScratchPool::bytes_held() const {
  size_t total = 0;
  for (const auto& b : free_) total += b.bytes;
  for (const auto& b : lent_) total += b.bytes;
  return total;
}

}  // namespace ff::detail
