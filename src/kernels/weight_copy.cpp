#include "kernels/weight_copy.h"

#include <functional>
#include <stdexcept>
#include <utility>

#include "kernels/convert.h"

namespace ff {

WeightCopy::WeightCopy(std::vector<MirroredRange> ranges, DType t) : ranges_(std::move(ranges)) {
  if (t == DType::f32)
    throw std::invalid_argument("WeightCopy: the copy must be a 16-bit dtype (bf16 or f16)");
  size_t total = 0;
  for (const MirroredRange& r : ranges_) starts_.push_back(total), total += r.count;
  buffer_.allocate(total, t, MemCategory::params);
  packed_ = std::make_unique<PackedWeights>();
}

void WeightCopy::refresh() {
  for (size_t i = 0; i < ranges_.size(); ++i)
    convert_from_f32(buffer_.ptr().at(starts_[i]), ranges_[i].data, ranges_[i].count);
  valid_ = true;
  ++refreshes_;
}

bool WeightCopy::multiply_packed(const void* w16, DType t, const PackedProduct& p) const {
  return valid_ && packed_->multiply(w16, t, refreshes_, p);
}

const void* WeightCopy::find(const float* w, size_t n, DType t) const {
  if (!valid_ || t != buffer_.dtype()) return nullptr;
  // std::less gives a total order over unrelated pointers, which raw < does not promise.
  const std::less<const float*> lt;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const MirroredRange& r = ranges_[i];
    if (!lt(w, r.data) && !lt(r.data + r.count, w + n))
      return buffer_.ptr().at(starts_[i] + size_t(w - r.data)).data();
  }
  return nullptr;
}

}  // namespace ff
