#include "kernels/fp8_recipe.h"

#include <atomic>
#include <cmath>
#include <mutex>

namespace ff {
namespace {
std::atomic<Fp8Recipe*> g_recipe{nullptr};
std::mutex g_mu;  // GEMMs run on the caller's thread, but a model may call from several
}  // namespace

void set_fp8_recipe(Fp8Recipe* r) { g_recipe.store(r); }
Fp8Recipe* fp8_recipe() { return g_recipe.load(); }

void Fp8Recipe::quantise(const void* key, GemmRole role, int operand, Fp8Format f, float* x, size_t n) {
  Slot* s;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = slots_.find({key, int(role), operand});
    if (it == slots_.end())
      it = slots_.emplace(std::make_tuple(key, int(role), operand), Slot{Fp8DelayedScale(f, history_, margin_), 0, false,
                                                                         Log{f, {}, {}}}).first;
    s = &it->second;
  }
  const float amax = fake_quantise_fp8(x, n, s->scale.scale(), f);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!s->used) s->log.scales.push_back(s->scale.scale());
  s->used = true;
  if (std::isnan(amax) || amax > s->pending) s->pending = amax;  // an inf/NaN poisons the step's amax
}

void Fp8Recipe::end_step() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [key, s] : slots_) {
    if (!s.used) continue;
    s.log.amaxes.push_back(s.pending);
    s.scale.record(s.pending);  // a non-finite amax (an overflowed step) leaves the history alone
    s.pending = 0, s.used = false;
  }
}

std::vector<Fp8Recipe::Log> Fp8Recipe::logs() const {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Log> out;
  for (const auto& [key, s] : slots_) out.push_back(s.log);
  return out;
}

}  // namespace ff
