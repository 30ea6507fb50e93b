#include "train/optimizer.h"

namespace ff {

AdamW::AdamW(const ParamLayout& layout, AdamWConfig cfg)
    : layout_(layout),
      cfg_(cfg),
      m_(layout.total(), MemCategory::optimizer),
      v_(layout.total(), MemCategory::optimizer) {}

void AdamW::step(float* params, const float* grads, float lr, int step) {
  AdamWHyper h{lr, cfg_.beta1, cfg_.beta2, cfg_.eps, cfg_.weight_decay, step};
  for (const ParamView& view : layout_.views())
    adamw_update(params + view.offset, grads + view.offset, m_.data() + view.offset,
                 v_.data() + view.offset, view.numel, h, view.is_matrix);
}

}  // namespace ff
