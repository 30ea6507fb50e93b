// The mixture-of-experts block's MLP, forward and backward:
//
//   x = ln2 (N, C) -> router logits (N, E) -> route_tokens (scores, top-k, gates, capacity, the
//   dispatch order) -> x_send: the kept routes' rows sorted by expert -> exchange (the identity
//   serially; all-to-all under expert parallelism) -> per local expert one gate/up GEMM, SwiGLU,
//   one down GEMM (a grouped GEMM: each expert's rows are contiguous) -> exchange back ->
//   out = mid + sum_j gate_j * y(route j) + shared experts (one dense SwiGLU, always active).
//
// Experts are held whole on every rank that holds them (expert parallelism splits experts, not
// their matrices). Under tensor parallelism the block is replicated: every tp rank holds the
// router, its experts and the shared experts whole and runs the block on all N tokens of the
// micro-batch (gathered under sequence parallelism), so routing is the serial model's; it keeps
// its own residual rows of the output, and hands back 1/tp of the input gradient, which the tp
// sum of column_input_backward makes whole. Shapes: N tokens, E experts (El local), k routes per token, M the rows at this
// rank's experts, Fe an expert's width, Fs the shared experts' width.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/swiglu.h"
#include "model/linear.h"
#include "model/model_hooks.h"
#include "model/moe_routing.h"

namespace ff {

namespace {

// Rows each local expert receives (El), from the (source, local expert) counts.
std::vector<int> expert_rows(const int32_t* received, int E, int ep) {
  const int El = E / ep;
  std::vector<int> rows(size_t(El), 0);
  for (int s = 0; s < ep; ++s)
    for (int e = 0; e < El; ++e) rows[size_t(e)] += received[s * El + e];
  return rows;
}

void check_rows(const MlpCall& m) {
  if (m.w->EP < 1 || m.w->E % m.w->EP != 0)
    throw std::logic_error("MoE block: n_experts must divide by the expert-parallel degree");
}

}  // namespace

size_t moe_scratch_floats(const BlockWidths& w, size_t N) {
  const size_t NK = N * size_t(w.K), M = NK * size_t(w.EP);
  return NK                                       // d_gates
         + NK * size_t(w.C) * 2                   // d_y_send, d_x_send
         + M * size_t(w.C) * 2                    // d_y_exp, d_x_exp
         + M * size_t(3 * w.Fe)                   // d_h, d_gate_up
         + N * size_t(w.E)                        // d_logits
         + N * size_t(3 * w.Fs);                  // shared d_h, d_gate_up
}

void ModelHooks::moe_mlp_forward(ModelHooks& h, const MlpCall& m, float* out) {
  check_rows(m);
  const GemmContext& g = *m.gemm;
  const MoeMlpActs& a = m.a->moe;
  const BlockWidths& w = *m.w;
  const int N = m.N, C = m.C, E = int(w.E), K = int(w.K), Fe = int(w.Fe), Fs = int(w.Fs), ep = int(w.EP);
  const float* x = h.column_input(m.a->ln2, size_t(N), C).f32();                    // (N, C)
  matmul_xwt(g, a.logits, x, m.weight(m.o->moe.router), N, C, E);                      // (N, E)
  // Statistics only from the pass that produces the output (a recomputation would count twice).
  route_tokens(*m.moe, {N, E, K}, m.router_bias, a, out ? m.stats : nullptr);
  const int32_t* slot = ints(a.slot);
  for (size_t i = 0; i < size_t(N) * K; ++i)
    if (slot[i] >= 0) copy_rows(a.x_send + size_t(slot[i]) * C, x + (i / size_t(K)) * C, size_t(C));
  int32_t* counts = ints(a.counts);
  ExpertExchange& ex = h.expert_exchange();
  ex.exchange_counts(counts, counts + E, E);
  ex.dispatch_begin(a.x_send, a.x_exp, C, counts, E);                               // (M, C)
  // The shared experts need no routed row: they run while the dispatch travels.
  if (Fs > 0) {
    matmul_xwt(g, a.shared_gate_up, x, m.weight(m.o->moe.shared_gate_up), N, C, 2 * Fs);  // (N, 2Fs)
    swiglu_forward(a.shared_h, a.shared_gate_up, N, Fs);                            // (N, Fs)
  }
  ex.dispatch_end();
  const std::vector<int> rows = expert_rows(counts + E, E, ep);
  size_t r0 = 0;
  for (size_t e = 0; e < rows.size(); ++e) {
    const int n = rows[e];
    if (n == 0) continue;
    const size_t off = e * m.o->moe.expert_stride;
    const WeightRef W13 = m.expert_weight(off), W2 = m.expert_weight(off + size_t(2) * Fe * C);
    matmul_xwt(g, a.gate_up + r0 * 2 * Fe, a.x_exp + r0 * C, W13, n, C, 2 * Fe);       // (n, 2Fe)
    swiglu_forward(a.h + r0 * Fe, a.gate_up + r0 * 2 * Fe, n, Fe);                  // (n, Fe)
    matmul_xwt(g, a.y_exp + r0 * C, a.h + r0 * Fe, W2, n, Fe, C);                      // (n, C)
    r0 += size_t(n);
  }
  ex.combine_begin(a.y_exp, a.y_send, C, counts, E);                                // (N k kept, C)
  if (!out) return ex.combine_end();
  // This rank's residual rows [row0, row0 + R) of the output: the residual and the shared
  // experts' down projection while the combine travels, then the routed rows with their gates.
  const int R = int(h.resid_rows(size_t(N))), row0 = int(h.resid_row0(size_t(N)));
  copy_rows(out, m.a->mid, size_t(R) * C);
  if (Fs > 0)
    matmul_xwt_add(g, out, a.shared_h + size_t(row0) * Fs, m.weight(m.o->moe.shared_down), R, Fs, C);
  ex.combine_end();
  for (int t = row0; t < row0 + R; ++t)
    for (int j = 0; j < K; ++j) {
      const int32_t s = slot[size_t(t) * K + j];
      if (s < 0) continue;
      const float g = a.gates[size_t(t) * K + j];
      const float* y = a.y_send + size_t(s) * C;
      float* o = out + size_t(t - row0) * C;
      for (int c = 0; c < C; ++c) o[c] += g * y[c];
    }
}

void ModelHooks::moe_mlp_backward(ModelHooks& h, const MlpCall& m, const float* d_resid, float* d_ln, float* G,
                                  const DeferredGrads* def) {
  if (def)
    throw std::logic_error("MoE blocks have no split (zero-bubble) backward; use another pipeline schedule");
  check_rows(m);
  const GemmContext& g = *m.gemm;
  const MoeMlpActs& a = m.a->moe;
  const BlockWidths& w = *m.w;
  const int N = m.N, C = m.C, E = int(w.E), K = int(w.K), Fe = int(w.Fe), Fs = int(w.Fs), ep = int(w.EP);
  const size_t NK = size_t(N) * K, M = NK * size_t(ep);
  // (N, C): out = mid + moe(x), so the residual's gradient, all rows of it.
  const float* d_out = h.row_output_backward(d_resid, size_t(N), C);
  float* d_gates = m.moe_scratch;                   // (N, k)
  float* d_y_send = d_gates + NK;                   // (N k, C)
  float* d_x_send = d_y_send + NK * C;              // (N k, C)
  float* d_y_exp = d_x_send + NK * C;               // (M, C)
  float* d_x_exp = d_y_exp + M * C;                 // (M, C)
  float* d_h = d_x_exp + M * C;                     // (M, Fe)
  float* d_gate_up = d_h + M * Fe;                  // (M, 2Fe)
  float* d_logits = d_gate_up + M * 2 * Fe;         // (N, E)
  float* d_sh = d_logits + size_t(N) * E;           // (N, Fs)
  float* d_sgu = d_sh + size_t(N) * Fs;             // (N, 2Fs)
  const float* x = h.column_input(m.a->ln2, size_t(N), C).f32();  // (N, C), after row_output_backward
  // Combine: out_t += gate_tj * y_send[slot]; so d_y = gate * d_out and d_gate = d_out . y.
  const int32_t* slot = ints(a.slot);
  for (size_t i = 0; i < NK; ++i) {
    const int32_t s = slot[i];
    d_gates[i] = 0;
    if (s < 0) continue;
    const float* dy = d_out + (i / size_t(K)) * C;
    const float* y = a.y_send + size_t(s) * C;
    float* d = d_y_send + size_t(s) * C;
    double dot = 0;
    for (int c = 0; c < C; ++c) d[c] = a.gates[i] * dy[c], dot += double(dy[c]) * y[c];
    d_gates[i] = float(dot);
  }
  const int32_t* counts = ints(a.counts);
  ExpertExchange& ex = h.expert_exchange();
  ex.dispatch_begin(d_y_send, d_y_exp, C, counts, E);                                // (M, C)
  // Shared experts (while the dispatch travels): a dense SwiGLU on every token; its input
  // gradient starts d_ln.
  if (Fs > 0) {
    matmul_dyw(g, d_sh, d_out, m.weight(m.o->moe.shared_down), N, Fs, C);              // (N, Fs)
    accumulate_dw(g, m.grad(G, m.o->moe.shared_down), d_out, a.shared_h, N, Fs, C);
    swiglu_backward(d_sgu, d_sh, a.shared_gate_up, N, Fs);                          // (N, 2Fs)
    matmul_dyw(g, d_ln, d_sgu, m.weight(m.o->moe.shared_gate_up), N, C, 2 * Fs);       // (N, C)
    accumulate_dw(g, m.grad(G, m.o->moe.shared_gate_up), d_sgu, x, N, C, 2 * Fs);
  } else {
    std::memset(d_ln, 0, size_t(N) * C * sizeof(float));
  }
  ex.dispatch_end();
  const std::vector<int> rows = expert_rows(counts + E, E, ep);
  size_t r0 = 0;
  for (size_t e = 0; e < rows.size(); ++e) {
    const int n = rows[e];
    if (n == 0) continue;
    const size_t off = e * m.o->moe.expert_stride, w2 = size_t(2) * Fe * C;
    matmul_dyw(g, d_h + r0 * Fe, d_y_exp + r0 * C, m.expert_weight(off + w2), n, Fe, C);  // (n, Fe)
    if (G) accumulate_dw(g, m.expert_grad(off + w2), d_y_exp + r0 * C, a.h + r0 * Fe, n, Fe, C);
    swiglu_backward(d_gate_up + r0 * 2 * Fe, d_h + r0 * Fe, a.gate_up + r0 * 2 * Fe, n, Fe);
    matmul_dyw(g, d_x_exp + r0 * C, d_gate_up + r0 * 2 * Fe, m.expert_weight(off), n, C, 2 * Fe);  // (n, C)
    if (G) accumulate_dw(g, m.expert_grad(off), d_gate_up + r0 * 2 * Fe, a.x_exp + r0 * C, n, C, 2 * Fe);
    r0 += size_t(n);
  }
  ex.combine_begin(d_x_exp, d_x_send, C, counts, E);                                 // (N k kept, C)
  // The router (while the combine travels): gates and both balancing losses back to the logits,
  // and the logits' weight gradient.
  route_backward(*m.moe, {N, E, K}, a, d_gates, m.loss_scale, d_logits);            // (N, E)
  accumulate_dw(g, m.grad(G, m.o->moe.router), d_logits, x, N, C, E);
  ex.combine_end();
  for (size_t i = 0; i < NK; ++i) {
    if (slot[i] < 0) continue;
    const float* d = d_x_send + size_t(slot[i]) * C;
    float* dl = d_ln + (i / size_t(K)) * C;
    for (int c = 0; c < C; ++c) dl[c] += d[c];
  }
  // The router's input gradient last, so d_ln sums its terms in the order the serial block always has.
  const WeightRef router = m.weight(m.o->moe.router);
  gemm_run_precision(g, false, false, N, C, E, 1.0f, d_logits, E, router.data, C, 1.0f, d_ln, C, GemmRole::dgrad,
                     router.at);
  // Every tp rank computed the whole gradient; the tp sum that follows must count it once
  // (a power-of-two scale: exact).
  if (const int t = h.column_ranks(); t > 1) {
    const float inv = 1.0f / float(t);
    for (size_t i = 0; i < size_t(N) * C; ++i) d_ln[i] *= inv;
  }
}

}  // namespace ff
