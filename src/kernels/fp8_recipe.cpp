#include "kernels/fp8_recipe.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

namespace ff {
namespace {
constexpr int kPerTensor = 6;  // 3 roles x 2 operands
size_t index_of(const Fp8Recipe::Key& k) {
  return size_t(k.id) * kPerTensor + size_t(k.role) * 2 + size_t(k.operand);
}
}  // namespace

Fp8Format Fp8Recipe::format_of(const Key& k) {
  return k.operand == 0 && k.role != int(GemmRole::forward) ? Fp8Format::e5m2 : Fp8Format::e4m3;
}

Fp8Recipe::Slot& Fp8Recipe::slot(const Key& k, Fp8Format f) {
  auto it = slots_.find(k);
  if (it == slots_.end())
    it = slots_.emplace(k, Slot{Fp8DelayedScale(f, history_, margin_), 0, false, Log{f, {}, {}}}).first;
  return it->second;
}

void Fp8Recipe::quantise(int64_t param_at, GemmRole role, int operand, Fp8Format f, float* x, size_t n) {
  Slot* s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = identity_ ? identity_(param_at) : param_at;
    s = &slot(Key{id, int(role), operand}, f);
  }
  const float amax = fake_quantise_fp8(x, n, s->scale.scale(), f);
  if (!recording_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!s->used) s->log.scales.push_back(s->scale.scale());
  s->used = true;
  if (std::isnan(amax) || amax > s->pending) s->pending = amax;  // an inf/NaN poisons the step's amax
}

void Fp8Recipe::end_step(const AmaxReduce& reduce) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reduce) {
    // Every rank of the group contributes the same-length vector whatever it used, so tensors
    // one rank alone used (an expert another rank holds too) still reach every rank alike.
    std::vector<float> amax(size_t(ids_) * kPerTensor, -1.0f);
    for (auto& [key, s] : slots_) {
      if (!s.used) continue;
      if (key.id < 0 || key.id >= ids_)
        throw std::logic_error("fp8 amax reduction: tensor id " + std::to_string(key.id) + " outside [0, " +
                               std::to_string(ids_) + ")");
      amax[index_of(key)] = std::isnan(s.pending) ? std::numeric_limits<float>::infinity() : s.pending;
    }
    reduce(amax);
    for (size_t i = 0; i < amax.size(); ++i) {
      if (amax[i] < 0) continue;
      const Key k{int64_t(i / kPerTensor), int(i % kPerTensor) / 2, int(i % 2)};
      Slot& s = slot(k, format_of(k));
      s.pending = amax[i], s.used = true;
    }
  }
  for (auto& [key, s] : slots_) {
    if (!s.used) continue;
    s.log.amaxes.push_back(s.pending);
    s.scale.record(s.pending);  // a non-finite amax (an overflowed step) leaves the history alone
    s.pending = 0, s.used = false;
  }
}

std::vector<Fp8Recipe::Log> Fp8Recipe::logs() const {
  std::vector<Log> out;
  for (auto& [key, log] : keyed_logs()) out.push_back(log);
  return out;
}

std::map<Fp8Recipe::Key, Fp8Recipe::Log> Fp8Recipe::keyed_logs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<Key, Log> out;
  for (const auto& [key, s] : slots_) out.emplace(key, s.log);
  return out;
}

std::map<Fp8Recipe::Key, std::vector<float>> Fp8Recipe::states() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<Key, std::vector<float>> out;
  for (const auto& [key, s] : slots_) out.emplace(key, s.scale.state());
  return out;
}

void Fp8Recipe::restore(const Key& k, const std::vector<float>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  slot(k, format_of(k)).scale.restore(state);
}

}  // namespace ff
