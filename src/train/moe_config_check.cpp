#include "train/moe_config_check.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ff {

void validate_moe_layout(const TrainConfig& c) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw std::runtime_error("config: " + msg);
  };
  const MoeConfig& m = c.model.moe;
  need(c.ep >= 1, fmt::format("ep must be >= 1 (got {})", c.ep));
  if (c.ep > 1) {
    need(m.enabled(), fmt::format("ep = {} needs an MoE model: set n_experts (a multiple of ep)", c.ep));
    need(m.n_experts % c.ep == 0,
         fmt::format("n_experts ({}) must be divisible by ep ({}): each expert-parallel rank holds n_experts / ep "
                     "experts; change n_experts or ep", m.n_experts, c.ep));
    if (c.dp > 0) {
      need((c.dp * c.cp) % c.ep == 0,
           fmt::format("ep ({}) must divide dp x cp = {} x {}: the experts are split over blocks of ep ranks that "
                       "hold the same dense weights; change ep or dp", c.ep, c.dp, c.cp));
      // One rank per expert group keeps whole expert gradients, ZeRO 2/3's dense group per-micro-batch ones.
      need(c.zero < 2 || c.dp * c.cp > c.ep,
           fmt::format("zero = {} with ep = dp x cp = {} leaves each expert on one rank, which cannot shard it; "
                       "use zero <= 1, or more data-parallel ranks than ep", c.zero, c.ep));
    }
  }
  if (!m.enabled()) return;
  need(c.schedule != PipeSchedule::zb_h1 || c.pp == 1,
       "MoE blocks have no split backward: schedule = zb-h1 needs n_experts = 0; use 1f1b, gpipe or interleaved");
}

}  // namespace ff
