#pragma once
// An MoE block's router, without the experts: scores from the router's logits, top-k selection,
// gates renormalised over the chosen experts, capacity dropping, the dispatch order (a stable sort
// of the routes by expert), the load-balancing losses, and all of their backward.
//
// Definitions (the oracle, tests/oracle/check_moe_against_torch.py, implements the same):
//   scores s = softmax(logits) or sigmoid(logits);  chosen = top-k of s + bias (ties: lower
//   expert first; the bias, DeepSeek-V3's, changes the choice only);  gate_j = s_j / sum(chosen s).
//   Capacity (cf > 0): each expert keeps at most ceil(cf * N * k / E) routes, first choices of
//   every token before any second choice, tokens in order (GShard); the rest are dropped (no
//   output, gate not renormalised).
//   aux = coeff * E * sum_i f_i P_i, f_i = routes chosen for expert i / (N k) (before dropping),
//   P_i = mean over tokens of p_i, p = s (softmax) or s / sum(s) (sigmoid).
//   z = coeff * mean_t logsumexp(logits_t)^2.
// Both losses are per micro-batch of N tokens and enter the loss sum as N * aux and N * z, so the
// step's reported loss adds their mean over micro-batches.
#include <cstdint>

#include "model/activations.h"
#include "model/moe_config.h"
#include "model/moe_stats.h"

namespace ff {

struct RouterShape {
  int N, E, K;
};

// From a.logits: scores, route, gates, slot and the sent counts (a.counts[0, E)). Adds this
// micro-batch's routes, drops and losses to *stats (null: not counted).
void route_tokens(const MoeConfig& m, const RouterShape& s, const float* bias, const MoeMlpActs& a,
                  MoeLayerStats* stats);
// d_logits (N, E), overwritten: from d_gates (N, k) and the two losses, whose gradient is
// loss_scale times theirs (the scale the token losses' gradient has).
void route_backward(const MoeConfig& m, const RouterShape& s, const MoeMlpActs& a, const float* d_gates,
                    float loss_scale, float* d_logits);

inline int32_t* ints(float* p) { return reinterpret_cast<int32_t*>(p); }

}  // namespace ff
