#include "plan/step_time.h"

#include <algorithm>
#include <cmath>

#include "plan/engine_step_time.h"
#include "plan/paper_formulas.h"

namespace ff {

namespace {

// Parameters of the largest pipeline stage on one tensor-parallel rank: its share of the blocks
// (the first virtual stages take the remainder) plus the embedding or the head.
double stage_parameters(const ModelConfig& c, const LayoutSpec& L) {
  const int stages = L.pp * L.chunks;
  const double blocks = std::ceil(double(c.n_layers) / stages) * L.chunks;
  const double vocab = double(c.vocab_size) * c.dim;
  const double ends = L.pp == 1 ? vocab * (c.tied_embeddings ? 1 : 2) + c.dim : vocab + c.dim;
  return (blocks * llama_block_parameter_count(c) + ends) / L.tp;
}

// Micro-batches whose activations the first stage keeps at once.
double in_flight(const LayoutSpec& L) {
  if (L.pp == 1) return 1;
  const double m = L.grad_accum, p = L.pp;
  if (L.schedule == PipeSchedule::gpipe) return m;
  if (L.schedule == PipeSchedule::interleaved) return std::min(m, p) * (1 + (p - 1) / (p * L.chunks));
  return std::min(m, p);
}

}  // namespace

RankMemory paper_memory(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl) {
  RankMemory m;
  const double psi = stage_parameters(c, L);
  const int n = L.dp * L.cp;
  const double P = cl.precision == StatePrecision::fp32 ? 4 : 2, O = cl.precision == StatePrecision::fp32 ? 8 : 12;
  const double shard = L.zero == 0 || n == 1 ? 1.0 : 1.0 / n;
  auto& b = m.bytes;
  b[size_t(MemCategory::params)] = int64_t(psi * P * (L.zero == 3 ? shard : 1));
  b[size_t(MemCategory::grads)] = int64_t(psi * P * (L.zero >= 2 ? shard : 1));
  b[size_t(MemCategory::optimizer)] = int64_t(psi * O * (L.zero >= 1 ? shard : 1));
  const double s = double(c.seq_len) / L.cp, mb = L.micro_batch, h = c.dim;
  const double layers = std::ceil(double(c.n_layers) / (L.pp * L.chunks)) * L.chunks;
  const double per_layer = korthikanti_layer_bytes(s, mb, h, c.n_heads, L.tp, activation_setting(L), cl.flash_attention) *
                           cl.activation_bytes / 2.0;
  double acts = per_layer * layers * in_flight(L);
  if (L.recompute == Recompute::full)  // one layer's full working set while it is recomputed
    acts += korthikanti_layer_bytes(s, mb, h, c.n_heads, L.tp, ActivationSetting::tp, cl.flash_attention);
  b[size_t(MemCategory::activations)] = int64_t(acts);
  // fp32 logits and their gradient on the last stage, plus collective buffers of a segment.
  b[size_t(MemCategory::workspace)] = int64_t(2 * 4 * s * mb * c.vocab_size / L.tp + 2 * P * llama_block_parameter_count(c) / L.tp);
  return m;
}

LayoutPrediction predict_layout(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl, int threads) {
  LayoutPrediction r;
  r.layout = L;
  r.memory = cl.engine ? estimate_peak_memory(c, L, cl.engine_host(threads)) : paper_memory(c, L, cl);
  r.fits = double(r.memory.peak()) <= cl.memory_bytes * (cl.engine ? 1.0 : 0.9);  // GPU: allocator slack

  const double tokens = double(L.global_batch()) * c.seq_len;
  const double fpt = training_flops_per_token(c);
  if (cl.engine && cl.rates.known()) {  // this engine on CPU ranks: the calibrated op-by-op model
    const EngineStepTime e = engine_step_time(c, L, cl, threads);
    r.compute = e.compute + e.other, r.bubble = e.bubble, r.tp_comm = e.tp_comm, r.pp_comm = e.pp_comm;
    r.dp_comm = e.dp_comm, r.core_sharing = e.core_sharing, r.link_cpu = e.link_cpu;
    r.gemm = e.gemm, r.attention = e.attention, r.elementwise = e.elementwise, r.optimizer = e.optimizer;
    r.step_seconds = e.step;
    r.tokens_per_s = tokens / r.step_seconds;
    r.mfu = r.tokens_per_s * fpt / ((L.gemm == Precision::fp32 ? cl.peak_flops : cl.peak16()) * L.ranks());
    return r;
  }
  const double s = double(c.seq_len) / L.cp, mb = L.micro_batch, h = c.dim, m = L.grad_accum;
  double flops = fpt * tokens / L.ranks();
  // Recompute: full re-runs each block's forward (a third of the FLOPs); selective re-runs the
  // attention core (Megatron; this engine recomputes it with the norms and SwiGLU, no GEMM).
  const double attn_fwd = 4.0 * c.n_layers * h * c.seq_len;
  if (L.recompute == Recompute::full) flops *= 4.0 / 3;  // 2N + 4Lhs more per token: a third
  if (L.recompute == Recompute::selective) flops *= 1 + attn_fwd / fpt;
  // Narrow GEMMs (few rows per micro-batch, thin tensor-parallel slices) run below the ceiling.
  const double rows = mb * s, width = h / L.tp;
  const double efficiency = cl.gemm_efficiency * rows / (rows + 128) * width / (width + 128);
  r.compute = flops / (cl.peak_flops * efficiency);

  if (L.pp > 1) {
    const double share = (L.pp - 1) / m / (L.schedule == PipeSchedule::interleaved ? L.chunks : 1);
    r.bubble = r.compute * share / (L.schedule == PipeSchedule::zb_h1 ? 3 : 1);
  }
  const double layers = double(c.n_layers) / L.pp;
  const double act = mb * s * h * cl.activation_bytes;  // one (b s, h) tensor
  // Each group costed on its link class: across nodes when some group of it spans nodes.
  const int world = L.ranks(), per_node = cl.devices_per_node, n = L.dp * L.cp;
  const LinkClass& tp_link = cl.link(group_spans_nodes(1, L.tp, world, per_node));
  // Megatron: per layer two all-reduces forward, two backward (all-gather + reduce-scatter under
  // sp: the same bytes); a full recompute repeats the forward's.
  const double per_layer =
      4 * tp_link.seconds(Coll::all_reduce, act, L.tp) * (L.recompute == Recompute::full ? 1.5 : 1);
  r.tp_comm = per_layer * layers * m;
  if (L.pp > 1) {
    const LinkClass& pp_link = cl.link(group_spans_nodes(L.tp * n, L.pp, world, per_node));
    r.pp_comm = 2 * m * L.chunks * pp_link.seconds(Coll::p2p, act / (L.sp ? L.tp : 1), 2);
  }
  if (n > 1) {
    const LinkClass& dp_link = cl.link(group_spans_nodes(L.tp, n, world, per_node));
    const double grad = stage_parameters(c, L) * (cl.precision == StatePrecision::fp32 ? 4 : 2);
    double comm = dp_link.seconds(Coll::all_reduce, grad, n);                                  // all-reduce, or RS + AG
    if (L.zero >= 2) comm += (m - 1) * dp_link.seconds(Coll::reduce_scatter, grad, n);        // RS every micro-batch
    if (L.zero == 3) comm += (2 * m - 1) * dp_link.seconds(Coll::all_gather, grad, n);        // gathers fwd + bwd
    // Buckets overlap the last micro-batch's backward; ZeRO-3's prefetched gathers the compute.
    const double hidden = L.zero == 3 ? 0.5 * r.compute : r.compute / m * 2 / 3;
    r.dp_comm = std::max(0.0, comm - hidden);
  }
  r.step_seconds = r.compute + r.bubble + r.tp_comm + r.pp_comm + r.dp_comm;
  r.tokens_per_s = tokens / r.step_seconds;
  r.mfu = r.tokens_per_s * fpt / (cl.peak_flops * L.ranks());
  return r;
}

}  // namespace ff
