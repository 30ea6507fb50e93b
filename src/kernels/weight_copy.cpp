#include "kernels/weight_copy.h"

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/convert.h"

namespace ff {
namespace {
// The live sources: one per trainer's copy or gather pool (a test may hold a parallel and a serial
// trainer at once, over disjoint buffers). Read by GEMMs on OpenMP workers, written at
// construction and destruction only.
constexpr int kSlots = 16;
std::atomic<const WeightTwinSource*> g_sources[kSlots];
std::atomic<uint64_t> g_generations{0};  // every refresh of every copy: a new number
}  // namespace

WeightCopy::WeightCopy(std::vector<MirroredRange> ranges, DType t) : ranges_(std::move(ranges)) {
  if (t == DType::f32)
    throw std::invalid_argument("WeightCopy: the copy must be a 16-bit dtype (bf16 or f16)");
  size_t total = 0;
  for (const MirroredRange& r : ranges_) starts_.push_back(total), total += r.count;
  buffer_.allocate(total, t, MemCategory::params);
  packed_ = std::make_unique<PackedWeights>();
  register_weight_twins(this);
}

WeightCopy::~WeightCopy() { unregister_weight_twins(this); }

void register_weight_twins(const WeightTwinSource* source) {
  for (std::atomic<const WeightTwinSource*>& slot : g_sources) {
    const WeightTwinSource* none = nullptr;
    if (slot.compare_exchange_strong(none, source)) return;
  }
  throw std::logic_error("more than " + std::to_string(kSlots) +
                         " 16-bit weight copies alive in one process");
}

void unregister_weight_twins(const WeightTwinSource* source) {
  for (std::atomic<const WeightTwinSource*>& slot : g_sources) {
    const WeightTwinSource* self = source;
    if (slot.compare_exchange_strong(self, nullptr)) return;
  }
}

void WeightCopy::refresh() {
  for (size_t i = 0; i < ranges_.size(); ++i)
    convert_from_f32(buffer_.ptr().at(starts_[i]), ranges_[i].data, ranges_[i].count);
  valid_ = true;
  ++refreshes_;
  generation_ = ++g_generations;
}

bool WeightCopy::multiply_packed(const void* w16, DType t, const PackedProduct& p) const {
  return valid_ && packed_->multiply(w16, t, generation_, p);
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

const void* find_weight_copy(const float* w, size_t n, DType t) {
  for (const std::atomic<const WeightTwinSource*>& slot : g_sources)
    if (const WeightTwinSource* c = slot.load(std::memory_order_acquire))
      if (const void* p = c->find(w, n, t)) return p;
  return nullptr;
}

bool multiply_packed_weight(const float* w, size_t n, DType t, const PackedProduct& p) {
  for (const std::atomic<const WeightTwinSource*>& slot : g_sources)
    if (const WeightTwinSource* c = slot.load(std::memory_order_acquire))
      if (const void* w16 = c->find(w, n, t)) return c->multiply_packed(w16, t, p);
  return false;
}

}  // namespace ff
