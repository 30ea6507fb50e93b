#include "model/moe_routing.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

namespace ff {

namespace {

double logsumexp(const float* z, int E) {
  double mx = z[0];
  for (int e = 1; e < E; ++e) mx = std::max(mx, double(z[e]));
  double s = 0;
  for (int e = 0; e < E; ++e) s += std::exp(double(z[e]) - mx);
  return mx + std::log(s);
}

// p = what the aux loss averages: the softmax scores, or the sigmoid scores normalised per token.
void balance_probs(const MoeConfig& m, const float* s, int E, double* p) {
  double sum = 1;
  if (m.router == RouterKind::sigmoid) {
    sum = 0;
    for (int e = 0; e < E; ++e) sum += s[e];
  }
  for (int e = 0; e < E; ++e) p[e] = s[e] / sum;
}

}  // namespace

void route_tokens(const MoeConfig& m, const RouterShape& sh, const float* bias, const MoeMlpActs& a,
                  MoeLayerStats* stats) {
  const int N = sh.N, E = sh.E, K = sh.K;
  int32_t* route = ints(a.route);
  int32_t* slot = ints(a.slot);
  int32_t* sent = ints(a.counts);
  std::vector<int> routed(size_t(E), 0);
  for (int t = 0; t < N; ++t) {
    const float* z = a.logits + size_t(t) * E;
    float* s = a.scores + size_t(t) * E;
    if (m.router == RouterKind::softmax) {
      const double lse = logsumexp(z, E);
      for (int e = 0; e < E; ++e) s[e] = float(std::exp(double(z[e]) - lse));
    } else {
      for (int e = 0; e < E; ++e) s[e] = float(1.0 / (1.0 + std::exp(-double(z[e]))));
    }
    // Top-k by selection, best first; a strict > keeps the lower expert on ties.
    int32_t* r = route + size_t(t) * K;
    double chosen_sum = 0;
    for (int j = 0; j < K; ++j) {
      int best = -1;
      float best_v = 0;
      for (int e = 0; e < E; ++e) {
        if (std::find(r, r + j, e) != r + j) continue;
        const float v = s[e] + (bias ? bias[e] : 0.0f);
        if (best < 0 || v > best_v) best = e, best_v = v;
      }
      r[j] = best;
      chosen_sum += s[best];
      ++routed[size_t(best)];
    }
    for (int j = 0; j < K; ++j) a.gates[size_t(t) * K + j] = float(s[r[j]] / chosen_sum);
  }
  // Capacity: first choices of all tokens, then second choices, ... (GShard's priority).
  const int cap = m.capacity_factor > 0 ? int(std::ceil(double(m.capacity_factor) * N * K / E)) : INT_MAX;
  std::vector<int> kept(size_t(E), 0);
  int dropped = 0;
  for (int j = 0; j < K; ++j)
    for (int t = 0; t < N; ++t) {
      const int e = route[size_t(t) * K + j];
      const bool keep = kept[size_t(e)] < cap;
      slot[size_t(t) * K + j] = keep ? 0 : -1;
      keep ? ++kept[size_t(e)] : ++dropped;
    }
  // The dispatch order: by expert, then token (a stable counting sort of the kept routes).
  std::vector<int> next(size_t(E), 0);
  for (int e = 0, off = 0; e < E; ++e) sent[e] = kept[size_t(e)], next[size_t(e)] = off, off += kept[size_t(e)];
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < K; ++j) {
      int32_t& sl = slot[size_t(t) * K + j];
      if (sl >= 0) sl = next[size_t(route[size_t(t) * K + j])]++;
    }
  if (!stats) return;
  // The losses, as sums over the micro-batch's tokens (N * aux, N * z).
  std::vector<double> P(size_t(E), 0.0), p(size_t(E), 0.0);
  double z_sum = 0;
  for (int t = 0; t < N; ++t) {
    balance_probs(m, a.scores + size_t(t) * E, E, p.data());
    for (int e = 0; e < E; ++e) P[size_t(e)] += p[size_t(e)];
    const double lse = logsumexp(a.logits + size_t(t) * E, E);
    z_sum += lse * lse;
  }
  double aux = 0;  // coeff * E * sum_i f_i * sum_t p_ti = N * aux
  for (int e = 0; e < E; ++e) aux += double(routed[size_t(e)]) / (double(N) * K) * P[size_t(e)];
  stats->aux_sum += double(m.aux_loss_coeff) * E * aux;
  stats->z_sum += double(m.z_loss_coeff) * z_sum;
  stats->tokens += N;
  stats->dropped += dropped;
  for (int e = 0; e < E; ++e) stats->routed[size_t(e)] += routed[size_t(e)];
}

void route_backward(const MoeConfig& m, const RouterShape& sh, const MoeMlpActs& a, const float* d_gates,
                    float loss_scale, float* d_logits) {
  const int N = sh.N, E = sh.E, K = sh.K;
  const int32_t* route = ints(a.route);
  std::vector<double> f(size_t(E), 0.0);  // the aux loss's constant f_i
  for (size_t i = 0; i < size_t(N) * K; ++i) f[size_t(route[i])] += 1.0 / (double(N) * K);
  const double aux_c = double(loss_scale) * m.aux_loss_coeff * E, z_c = double(loss_scale) * m.z_loss_coeff;
  std::vector<double> ds(size_t(E), 0.0), p(size_t(E), 0.0);
  for (int t = 0; t < N; ++t) {
    const float* s = a.scores + size_t(t) * E;
    const int32_t* r = route + size_t(t) * K;
    const float* g = a.gates + size_t(t) * K;
    const float* dg = d_gates + size_t(t) * K;
    std::fill(ds.begin(), ds.end(), 0.0);
    // gate_j = s_j / S over the chosen: ds_j = (dg_j - sum_i dg_i gate_i) / S.
    double S = 0, dot = 0;
    for (int j = 0; j < K; ++j) S += s[r[j]], dot += double(dg[j]) * g[j];
    for (int j = 0; j < K; ++j) ds[size_t(r[j])] += (dg[j] - dot) / S;
    // aux: d(N aux)/dp_ti = coeff * E * f_i, through p = s or s / sum(s).
    if (m.router == RouterKind::softmax) {
      for (int e = 0; e < E; ++e) ds[size_t(e)] += aux_c * f[size_t(e)];
    } else {
      balance_probs(m, s, E, p.data());
      double sum = 0, pdot = 0;
      for (int e = 0; e < E; ++e) sum += s[e], pdot += aux_c * f[size_t(e)] * p[size_t(e)];
      for (int e = 0; e < E; ++e) ds[size_t(e)] += (aux_c * f[size_t(e)] - pdot) / sum;
    }
    float* dz = d_logits + size_t(t) * E;
    if (m.router == RouterKind::softmax) {
      double sds = 0;
      for (int e = 0; e < E; ++e) sds += s[e] * ds[size_t(e)];
      for (int e = 0; e < E; ++e) dz[e] = float(s[e] * (ds[size_t(e)] - sds));
    } else {
      for (int e = 0; e < E; ++e) dz[e] = float(ds[size_t(e)] * s[e] * (1.0 - s[e]));
    }
    // z: d(coeff * lse^2)/dz_e = coeff * 2 lse softmax(z)_e.
    const float* z = a.logits + size_t(t) * E;
    const double lse = logsumexp(z, E);
    for (int e = 0; e < E; ++e) dz[e] += float(z_c * 2.0 * lse * std::exp(double(z[e]) - lse));
  }
}

}  // namespace ff
