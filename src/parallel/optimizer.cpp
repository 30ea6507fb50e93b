#include "parallel/optimizer.h"

#include <stdexcept>

#include "kernels/sgd.h"

namespace ff {

const EnumTable<OptimizerKind>& optimizer_names() {
  static const EnumTable<OptimizerKind> names{
      {OptimizerKind::adamw, "adamw"},
      {OptimizerKind::sgd, "sgd", "plain SGD with the same decoupled weight decay; betas and eps unused"}};
  return names;
}

std::vector<OptimSpan> full_group_spans(const GroupLayout& layout) {
  std::vector<OptimSpan> spans;
  for (const ParamTensorSpan& t : layout.tensors()) spans.push_back({t.offset, t.offset, t.count, t.decay});
  return spans;
}

AdamW::AdamW(std::vector<OptimSpan> spans, size_t state_size, AdamWConfig cfg)
    : spans_(std::move(spans)),
      cfg_(cfg),
      m_(state_size, MemCategory::optimizer),
      v_(state_size, MemCategory::optimizer) {}

void AdamW::step(float* params, const float* grads, float lr, int step) {
  if (cfg_.kind == OptimizerKind::sgd) {
    for (const OptimSpan& s : spans_)
      sgd_update(params + s.param_at, grads + s.state_at, s.count, lr, cfg_.weight_decay, s.decay);
    return;
  }
  AdamWHyper h{lr, cfg_.beta1, cfg_.beta2, cfg_.eps, cfg_.weight_decay, step};
  for (const OptimSpan& s : spans_)
    adamw_update(params + s.param_at, grads + s.state_at, m_.data() + s.state_at,
                 v_.data() + s.state_at, s.count, h, s.decay);
}

}  // namespace ff
