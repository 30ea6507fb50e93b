#include "plan/paper_formulas.h"

namespace ff {

double zero_state_bytes(double psi, int n, int zero, StatePrecision p) {
  // (params, grads, optimizer) bytes per parameter.
  const double P = p == StatePrecision::fp32 ? 4 : 2, G = P, O = p == StatePrecision::fp32 ? 8 : 12;
  switch (zero) {
    case 0: return psi * (P + G + O);
    case 1: return psi * (P + G) + psi * O / n;
    case 2: return psi * P + psi * (G + O) / n;
    default: return psi * (P + G + O) / n;
  }
}

double korthikanti_layer_bytes(double s, double b, double h, double a, double t, ActivationSetting k, bool flash) {
  const double sbh = s * b * h, scores = flash ? 0 : 5 * a * s / h;
  switch (k) {
    case ActivationSetting::none: return sbh * (34 + scores);
    case ActivationSetting::tp: return sbh * (10 + 24 / t + scores / t);
    case ActivationSetting::tp_sp: return sbh / t * (34 + scores);
    case ActivationSetting::tp_selective: return sbh * (10 + 24 / t);
    case ActivationSetting::tp_sp_selective: return 34 * sbh / t;
    case ActivationSetting::full: return 2 * sbh;
  }
  return 0;
}

ActivationSetting activation_setting(const LayoutSpec& L) {
  if (L.recompute == Recompute::full) return ActivationSetting::full;
  if (L.tp == 1) return L.recompute == Recompute::selective ? ActivationSetting::tp_selective : ActivationSetting::none;
  if (L.recompute == Recompute::selective) return L.sp ? ActivationSetting::tp_sp_selective : ActivationSetting::tp_selective;
  return L.sp ? ActivationSetting::tp_sp : ActivationSetting::tp;
}

double llama_block_parameter_count(const ModelConfig& c) {
  // q/k/v, o (A = h unless head_dim is set), the MLP, two norms, and Qwen2's q/k/v bias.
  const double h = c.dim, kv = double(c.n_kv_heads) * c.head_dim(), a = c.attention_dim();
  const double bias = c.qkv_bias ? a + 2 * kv : 0.0;
  return h * (a + 2 * kv) + a * h + 3 * h * c.ffn_dim + 2 * h + bias;
}

double llama_parameter_count(const ModelConfig& c) {
  const double h = c.dim, V = c.vocab_size;
  return V * h * (c.tied_embeddings ? 1 : 2) + c.n_layers * llama_block_parameter_count(c) + h;
}

}  // namespace ff
