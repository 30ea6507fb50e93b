#pragma once
// Published closed forms the planner uses at paper scale (GPU clusters, 16-bit activations), and
// which tests check against the papers' own numbers (/work/shared/FORMULAS.md).
#include "model/model_config.h"
#include "plan/layout_spec.h"

namespace ff {

// Model-state bytes per rank (Rajbhandari et al. 2020): 16 bytes per parameter for both fp32
// AdamW (4 + 4 + 8) and mixed-precision Adam (2 + 2 + 12); stage 1 shards the optimizer, 2 the
// gradients too, 3 everything, over n ranks.
double zero_state_bytes(double psi, int n, int zero, StatePrecision p);

// Korthikanti et al. 2022, activation bytes of one transformer layer with 2-byte activations:
// s sequence, b micro-batch, h hidden, a heads, t tensor-parallel degree. flash: the s x s
// attention scores (the 5as/h term) are never stored (flash attention).
enum class ActivationSetting { none, tp, tp_sp, tp_selective, tp_sp_selective, full };
double korthikanti_layer_bytes(double s, double b, double h, double a, double t, ActivationSetting k,
                               bool flash = false);
// The setting a layout runs in (the engine's recompute policies map to Megatron's).
ActivationSetting activation_setting(const LayoutSpec& L);

// Parameters of the LLaMA-style model (FORMULAS.md): embedding, head if untied, blocks, norms.
double llama_parameter_count(const ModelConfig& c);
// Of one dense decoder block.
double llama_block_parameter_count(const ModelConfig& c);

}  // namespace ff
