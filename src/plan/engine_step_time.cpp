#include "plan/engine_step_time.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "comm/engine.h"
#include "plan/rank_model.h"
#include "parallel/data/ddp.h"
#include "parallel/model_state.h"
#include "plan/dp_overlap.h"
#include "plan/exchange_work.h"
#include "plan/node_first.h"
#include "plan/pipeline_timeline.h"

namespace ff {

namespace {

constexpr double kF = 4;  // bytes per fp32 element: every tensor the engine streams is fp32

// One rank's costs from the per-core rates: each kind of work at the threads' worth it gets from
// the rank's threads (plan/thread_scaling.h: GEMMs split over threads better than the
// element-wise kernels, whose barriers and shared memory bandwidth cost them).
struct Costs {
  const EngineRates& r;
  Precision gemm_precision;
  int threads;
  double gemm_threads, attention_threads, elementwise_threads, optimizer_threads;
  // oversubscribed: the node's ranks x threads exceed its cores.
  Costs(const EngineRates& rates, Precision p, int t, bool oversubscribed)
      : r(rates), gemm_precision(p), threads(std::max(1, t)),
        gemm_threads(rates.thread_scaling.effective_threads(WorkKind::gemm, threads, oversubscribed)),
        attention_threads(rates.thread_scaling.effective_threads(WorkKind::attention, threads, oversubscribed)),
        elementwise_threads(rates.thread_scaling.effective_threads(WorkKind::elementwise, threads, oversubscribed)),
        optimizer_threads(rates.thread_scaling.effective_threads(WorkKind::optimizer, threads, oversubscribed)) {}
  // One linear over M rows (tokens), N x K weight; its backward's dgrad and wgrad do the same FLOPs.
  double gemm(double M, double N, double K) const {
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    const GemmTable& table = gemm_precision == Precision::fp32 || r.gemm_bf16.empty() ? r.gemm_fp32 : r.gemm_bf16;
    return 2 * M * N * K / (table.at(M, std::sqrt(N * K)) * gemm_threads);
  }
  // Bytes streamed by element-wise kernels whose largest operand is `working_set` bytes.
  double stream(double bytes, double working_set) const {
    return bytes / (r.bandwidth.at(working_set) * elementwise_threads);
  }
  // Causal attention, forward + backward, and its forward alone: the bf16 kernels' rates under
  // bf16 GEMM inputs (kernels/attention_precision.h); files without the forward's table take 2 of
  // the 7 T^2 D products.
  bool bf16_attention() const { return gemm_precision == Precision::bf16 && !r.attention_dim_bf16.empty(); }
  double attention(double units, double T, double D) const {
    const GemmTable& t = bf16_attention() ? r.attention_dim_bf16 : r.attention_dim;
    return units * (t.empty() ? r.attention.at(T) : t.at(T, D)) / attention_threads;
  }
  double attention_forward(double units, double T, double D) const {
    const GemmTable& t = bf16_attention() ? r.attention_fwd_dim_bf16 : r.attention_fwd_dim;
    return t.empty() ? attention(units, T, D) * 2 / 7 : units * t.at(T, D) / attention_threads;
  }
  // Context parallelism's block form: the calibrated full or diagonal blocks of the run's kernels,
  // and `units` B H c^2 D of them at chunk length c.
  const GemmTable& cp_table(bool diagonal) const {
    if (bf16_attention()) return diagonal ? r.cp_diag_dim_bf16 : r.cp_block_dim_bf16;
    return diagonal ? r.cp_diag_dim : r.cp_block_dim;
  }
  bool cp_blocks() const { return !cp_table(false).empty() && !cp_table(true).empty(); }
  double cp_block(double units, double c, double D, bool diagonal) const {
    return units * cp_table(diagonal).at(c, D) / attention_threads;
  }
  // One collective the step blocks on (tp's all-reduces, cp's all-gathers and all-to-alls, ep's
  // exchange): its alpha-beta time plus what issuing it after compute adds (cost_rates.h).
  double coll(const LinkClass* link, Coll op, double bytes, int n) const {
    return link->seconds(op, bytes, n) + r.collective_overhead;
  }
  // `count` elements through one of the engine's kernels at calibrate's per-element rate (the
  // optimizer's per-parameter curve at the optimizer's thread scaling).
  double kernel(const RateCurve& c, double count) const {
    const double t = &c == &r.optimizer ? optimizer_threads : elementwise_threads;
    return count > 0 ? count * c.at(count) / t : 0;
  }
  bool kernels() const { return r.kernels_known(); }
};

// One rank's work per micro-batch: forward, backward (both passes), and its communication.
struct MicroBatchCost {
  double fwd = 0, bwd = 0, comm = 0;  // comm: tp, cp and ep collectives
  double pp_comm = 0;                  // the pipeline's activation out and gradient back
  double weight = 0;  // of bwd, the blocks' weight-gradient GEMMs (what zb-h1's W pass runs)
  double gemm = 0, attention = 0, elementwise = 0;  // fwd + bwd (+ recompute) by kind
  double ep_spin = 0;  // ranks sharing cores: CPU a mean ep rank spends polling for the busiest
};

struct Groups {  // the link each group of the layout uses
  const LinkClass *tp, *cp, *dp, *pp, *ep;
};

// A mesh axis's group (its ranks `stride` apart, n per group): its ranks on one node, all n where
// it stays inside one.
int ranks_on_one_node(int stride, int n, int world, int per_node) {
  if (!group_spans_nodes(stride, n, world, per_node)) return n;
  return stride >= per_node ? 1 : std::min(n, per_node / stride);
}

// The link a mesh axis's groups use: the same-node class, or across nodes the class as such a
// group sees it while every rank of a node sends across at once (LinkClass::shared_by), with
// Comm's node-first forms where it has several ranks on each node.
LinkClass axis_link(const ClusterSpec& cl, int stride, int n, int world, int per_node) {
  if (!group_spans_nodes(stride, n, world, per_node)) return cl.same_node;
  const int on_one_node = ranks_on_one_node(stride, n, world, per_node);
  LinkClass l = cl.across_nodes.shared_by(n, on_one_node, per_node);
  l.node_first = node_first_form(cl.same_node, cl.across_nodes, n, on_one_node, per_node);
  return l;
}

// One block's element-wise kernels, forward + backward, at their calibrated rates: two RMSNorms
// over the rank's R residual rows, RoPE on q and k, SwiGLU over `swiglu` outputs (tokens x width,
// the routed copies for MoE), and zeroing the qkv gradient before attention's backward adds to it.
double block_kernels(const Costs& k, const BlockWidths& w, double N, double R, double swiglu) {
  const double C = double(w.C), q = double(w.A), kv = (double(w.Q) - q) / 2;  // q and k (= v) widths
  return k.kernel(k.r.rmsnorm, 2 * R * C) + k.kernel(k.r.rope, N * (q + kv)) + k.kernel(k.r.swiglu, swiglu) +
         k.stream(N * double(w.Q) * kF, N * double(w.Q) * kF);
}

// ep_load: the busiest ep rank's routed rows over the mean rank's (plan/routing_load.h; 1: even);
// share: ranks per core (above 1 when they share cores).
MicroBatchCost micro_batch(const ModelConfig& c, const LayoutSpec& L, const RankModel& rm, const Costs& k,
                       const Groups& g, double ep_load, double share) {
  const BlockWidths& w = rm.widths;
  const double N = double(L.micro_batch) * c.seq_len / L.cp, R = L.sp ? N / L.tp : N, C = double(w.C);
  const double act = N * C * kF;  // one (N, C) fp32 tensor
  MicroBatchCost t;
  double refwd = 0;  // recompute: forward work repeated in the backward
  for (const ModelChunk& ch : rm.chunks) {
    for (int l = ch.first_layer; l < ch.last_layer; ++l) {
      const bool moe = rm.layout->block_kind(l) == BlockKind::moe;
      // GEMMs: qkv, o; dense MLP gate_up, down; the backward does dgrad and wgrad of each.
      double gemm = k.gemm(N, double(w.Q), C) + k.gemm(N, C, double(w.A));
      double mlp_tokens = N, mlp_width = double(w.F);
      if (moe) {
        // The router, then the routed tokens through each expert, and the shared experts on every
        // token. Each block's exchange waits for the ep rank whose experts received the most rows:
        // N k routed rows per rank on average, ep_load times that on the busiest, spread over its
        // E/ep experts.
        const double local = double(w.E) / L.ep, received = N * w.K * ep_load, rows = received / local;
        gemm += k.gemm(N, double(w.E), C) + local * (k.gemm(rows, 2.0 * w.Fe, C) + k.gemm(rows, C, double(w.Fe)));
        gemm += k.gemm(N, 2.0 * w.Fs, C) + k.gemm(N, C, double(w.Fs));
        mlp_tokens = received, mlp_width = double(w.Fe);
        // The routed rows' copies and gated sums; over ep, the blocking exchange of the row counts
        // and the dispatch and combine both ways.
        const MoeCopyBytes mc = moe_copy_bytes(N, R, N * w.K, received, C);
        const double routed_set = N * w.K * C * kF;
        t.fwd += k.stream(mc.fwd, routed_set), t.bwd += k.stream(mc.bwd, routed_set);
        t.elementwise += k.stream(mc.fwd, routed_set) + k.stream(mc.bwd, routed_set);
        if (L.ep > 1)
          t.comm += 4 * k.coll(g.ep, Coll::all_to_all, received * C * kF, L.ep) +
                    k.coll(g.ep, Coll::all_to_all, double(w.E) * 4, L.ep);
        // On shared cores the mean rank's combine, forward and backward, waits while the busiest
        // does (ep_load - 1) times its expert work at 1/share of a core; a waiting rank keeps
        // polling, holding its share of the core, for the comm engine's spin window before it
        // sleeps (comm/engine.h), so that much of each wait is CPU the ranks share.
        if (L.ep > 1 && ep_load > 1 && share > 1) {
          const double mean_rows = N * w.K / local;
          const double experts = local * (k.gemm(mean_rows, 2.0 * w.Fe, C) + k.gemm(mean_rows, C, double(w.Fe))) +
                                 k.kernel(k.r.swiglu, N * w.K * double(w.Fe)) / 3;  // forward; backward twice
          const double spin = std::chrono::duration<double>(detail::kWaiterSpinWindow).count();
          for (double pass : {1.0, 2.0}) t.ep_spin += std::min(spin, (ep_load - 1) * pass * experts * share);
        }
      } else {
        gemm += k.gemm(N, 2 * mlp_width, C) + k.gemm(N, C, mlp_width);
      }
      // Attention: each cp rank does 1/cp of the causal work; a2a splits heads, the others the queries.
      const double units = double(L.micro_batch) * w.H * double(c.seq_len) * c.seq_len * c.head_dim() / L.cp;
      const double attn_T = L.cp_comm == CpComm::a2a ? c.seq_len : double(c.seq_len) / L.cp;
      double attn = k.attention(units, attn_T, c.head_dim());
      double attn_fwd = k.attention_forward(units, attn_T, c.head_dim());
      if (L.cp > 1 && L.cp_comm != CpComm::a2a && k.cp_blocks()) {
        // The block form: a rank's two chunks of c = T / 2cp queries meet 2cp - 1 earlier chunks
        // (full blocks, the headtail balance) and themselves (two causal diagonals) at their
        // calibrated rates; the forward's share as the whole-sequence kernel's at that length.
        const double chunk = double(c.seq_len) / (2 * L.cp);
        const double block_units = double(L.micro_batch) * w.H * chunk * chunk * c.head_dim();
        const double fwd_share = attn_fwd / attn;
        attn = (2 * L.cp - 1) * k.cp_block(block_units, chunk, c.head_dim(), false) +
               2 * k.cp_block(block_units, chunk, c.head_dim(), true);
        attn_fwd = fwd_share * attn;
      }
      // Element-wise work, forward (the backward about twice it): two norms, RoPE on q and k,
      // SwiGLU, the residual adds; at the calibrated rates of the engine's kernels when the
      // cluster file has them, else as bytes (norms read and write C, adds 3C, RoPE q and k,
      // SwiGLU reads 2F and writes F) over the bandwidth of the working set.
      const double elem = (10 * R / N * C + 2 * double(w.Q)) * N * kF + 3 * mlp_width * mlp_tokens * kF;
      const double elem_t = k.kernels() ? block_kernels(k, w, N, R, mlp_tokens * mlp_width) / 3
                                        : k.stream(elem, N * std::max(C, 2 * mlp_width) * kF);
      t.fwd += gemm + attn_fwd + elem_t;
      t.bwd += 2 * gemm + (attn - attn_fwd) + 2 * elem_t;
      t.weight += gemm;  // each linear's wgrad: as many FLOPs as its forward
      if (L.recompute == Recompute::full) refwd += gemm + attn_fwd + elem_t;
      if (L.recompute == Recompute::selective) refwd += attn_fwd + elem_t;
      const bool again = L.recompute != Recompute::none;
      t.gemm += (L.recompute == Recompute::full ? 4 : 3) * gemm;
      t.attention += attn + (again ? attn_fwd : 0), t.elementwise += (again ? 4 : 3) * elem_t;
      // Tensor parallelism: per block two all-reduces forward, two backward (all-gather +
      // reduce-scatter under sp: the same bytes), and the forward's again under full recompute.
      if (L.tp > 1) t.comm += (4 + (L.recompute == Recompute::full ? 2 : 0)) * k.coll(g.tp, Coll::all_reduce, act, L.tp);
      if (L.cp > 1) {  // K and V of this rank's tokens (and their gradients back)
        const double kv = 2.0 * c.n_kv_heads * c.head_dim() / L.tp * N * kF;
        // K/V fwd; K/V + dK/dV bwd. Each ring step is posted before the previous piece's attention
        // and waited after it: no blocking overhead.
        if (L.cp_comm == CpComm::ring) t.comm += 3 * (L.cp - 1) * g.cp->seconds(Coll::p2p, kv, 2);
        if (L.cp_comm == CpComm::allgather)
          t.comm += 2 * k.coll(g.cp, Coll::all_gather, kv * L.cp, L.cp) + k.coll(g.cp, Coll::reduce_scatter, kv * L.cp, L.cp);
        if (L.cp_comm == CpComm::a2a) {  // five blocking all-to-alls and the reshuffles around them
          const UlyssesWork u = ulysses_work(N, double(w.Q), double(w.H), c.head_dim());
          for (double bytes : u.fwd_sends) t.comm += k.coll(g.cp, Coll::all_to_all, bytes, L.cp);
          for (double bytes : u.bwd_sends) t.comm += k.coll(g.cp, Coll::all_to_all, bytes, L.cp);
          const double set = N * double(w.Q) * kF;  // the largest operand reshuffled
          t.fwd += k.stream(u.fwd_copy_bytes, set), t.bwd += k.stream(u.bwd_copy_bytes, set);
          t.elementwise += k.stream(u.fwd_copy_bytes, set) + k.stream(u.bwd_copy_bytes, set);
        }
      }
    }
    if (ch.embedding) t.fwd += k.stream(2 * act, act), t.bwd += k.stream(2 * act, act), t.elementwise += 2 * k.stream(2 * act, act);
    const double before_head = t.fwd + t.bwd;
    if (ch.head) {  // final norm, the head's GEMM and the cross-entropy's passes over the logits
      const double V = double(rm.vocab_rows), logits = N * V * kF;
      const double g3 = k.gemm(N, V, C);
      if (k.kernels()) {  // the loss's forward and backward run together, at the forward's end
        const double norm = k.kernel(k.r.rmsnorm, R * C);
        t.fwd += g3 + norm / 3 + k.kernel(k.r.cross_entropy, N * V);
        t.bwd += 2 * g3 + 2 * norm / 3 + k.stream(R * C * kF, R * C * kF);  // and zeroing d_resid
      } else {
        t.fwd += g3 + k.stream(4 * act + 2 * logits, logits);
        t.bwd += 2 * g3 + k.stream(8 * act + 2 * logits, logits);
      }
      if (L.tp > 1) t.comm += 2 * k.coll(g.tp, Coll::all_reduce, act, L.tp) + 3 * k.coll(g.tp, Coll::all_reduce, N * kF, L.tp);
    }
    if (ch.head) t.gemm += 3 * k.gemm(N, double(rm.vocab_rows), C), t.elementwise += t.fwd + t.bwd - before_head - 3 * k.gemm(N, double(rm.vocab_rows), C);
    // Activation out, gradient back: sends are asynchronous, and a receive's wait for the other
    // stage is the schedule's fill (below), so no blocking overhead.
    if (L.pp > 1) t.pp_comm += 2 * g.pp->seconds(Coll::p2p, R * C * kF, 2);
  }
  t.bwd += refwd;
  return t;
}

// Per step: the data-parallel (and ZeRO) collectives over dp x cp that the step waits for, and
// AdamW on the local shard. forward, backward: one micro-batch's compute as the wall clock sees it,
// which DDP's all-reduces and ZeRO's gathers and reduce-scatters hide behind (plan/dp_overlap.h).
// on_node: the dp x cp group's ranks on one node (all of them: no byte leaves it); hidden_bytes:
// the bytes the rank sends off its node while the compute runs (receiving as many).
void per_step(const LayoutSpec& L, const RankModel& rm, const Costs& k, const LinkClass& link, int on_node,
              double forward, double backward, double& comm, double& optimizer, double& hidden_bytes) {
  const int n = L.dp * L.cp;
  double local = 0, compute_params = 0;
  std::vector<SegmentComm> segments;
  const std::vector<ParamSegment>& layout_segments = rm.layout->segments();
  for (size_t i = 0; i < layout_segments.size(); ++i) {
    const ParamSegment& s = layout_segments[i];
    const double bytes = double(s.count) * kF;
    local += n > 1 && L.zero > 0 ? std::ceil(double(s.count) / n) : double(s.count);
    if (n == 1) continue;
    // A segment's share of the compute as its share of the weights the GEMMs multiply by; the
    // embedding's lookup and scatter cost next to nothing.
    const double share = rm.layout->segment_name(i) == "embedding" ? 0 : double(s.count);
    compute_params += share;
    // (DDP's all-reduces are per bucket, below.)
    segments.push_back(SegmentComm{share, 0, link.seconds(Coll::all_gather, bytes, n),
                                   link.seconds(Coll::reduce_scatter, bytes, n), bytes});
  }
  for (SegmentComm& s : segments) s.share /= std::max(1.0, compute_params);
  // DDP reduces buckets, not segments: backward's consecutive segments while they fit in the
  // trainer's bucket (parallel/data/ddp.h, the same grouping), each bucket once its last segment
  // is made. Two 2 MiB segments in one 4 MiB bucket start their all-reduce a segment later.
  std::vector<SegmentComm> buckets;
  if (n > 1 && L.zero == 0) {
    const size_t bucket_elems = size_t(DataParallelConfig{}.bucket_mb * double(1 << 20) / kF);
    const auto planned = BucketedAllReduce::plan_buckets(layout_segments, rm.layout->total(), bucket_elems);
    for (auto b = planned.rbegin(); b != planned.rend(); ++b) {  // back into layout order
      SegmentComm c;
      for (size_t i = 0; i < layout_segments.size(); ++i)
        if (layout_segments[i].offset >= b->lo && layout_segments[i].offset < b->hi) c.share += segments[i].share;
      c.bytes = double(b->hi - b->lo) * kF;
      c.all_reduce = link.seconds(Coll::all_reduce, c.bytes, n);
      buckets.push_back(c);
    }
  }
  comm = 0;
  auto total = [&](double SegmentComm::*of) {
    double sum = 0;
    for (const SegmentComm& s : segments) sum += s.*of;
    return sum;
  };
  hidden_bytes = 0;
  if (n > 1) {
    // DDP reduces the last micro-batch's gradients; ZeRO-2/3 reduce-scatter every micro-batch's
    // and ZeRO-3 gathers for each; ZeRO-1/2 gather the updated shards after the optimizer, and
    // ZeRO-1 reduce-scatters once, after the last backward.
    const double m = L.grad_accum;
    if (L.zero == 0) comm = ddp_exposed(buckets, backward);
    else if (L.zero == 3) comm = m * zero_exposed(segments, forward, backward, true, true);
    else if (L.zero == 2) comm = m * zero_exposed(segments, forward, backward, false, true) + total(&SegmentComm::all_gather);
    else comm = total(&SegmentComm::reduce_scatter) + total(&SegmentComm::all_gather);
    // The same collectives' time on the link and bytes off the node. While the compute runs the
    // link is busy for all but the exposed time (after backward, and where compute waits for a
    // gather, the link is what it waits on), so that share of the bytes crosses hidden: by time,
    // which is by bytes where the collectives share a bandwidth and their latencies are small.
    double busy = 0, off_node = 0;
    auto issued = [&](Coll op, double seconds, double bytes, double times) {
      busy += times * seconds, off_node += times * link.off_node_bytes(op, bytes, n, on_node);
    };
    if (L.zero == 0)
      for (const SegmentComm& b : buckets) issued(Coll::all_reduce, b.all_reduce, b.bytes, 1);
    for (const SegmentComm& s : segments) {
      if (L.zero == 3) issued(Coll::all_gather, s.all_gather, s.bytes, 2 * m);
      if (L.zero == 1 || L.zero == 2) issued(Coll::all_gather, s.all_gather, s.bytes, 1);
      if (L.zero > 0) issued(Coll::reduce_scatter, s.reduce_scatter, s.bytes, L.zero == 1 ? 1 : m);
    }
    if (busy > 0) hidden_bytes = off_node * std::clamp(1 - comm / busy, 0.0, 1.0);
  }
  // Calibrated: zeroing the gradients, their norm, the clip and AdamW per parameter, as the engine
  // runs them. Else as bytes: AdamW reads param, grad, m, v and writes param, m, v; the gradient
  // is zeroed and its norm read.
  optimizer = k.kernels() ? k.kernel(k.r.optimizer, local) : k.stream(9 * local * kF, local * kF);
  // 16-bit GEMMs read a copy of the rank's weights rounded once per step (none under a sharded
  // ZeRO-3, whose gathers hold their own; kernels/weight_copy.h).
  if (k.kernels() && L.gemm != Precision::fp32 && !(L.zero == 3 && n > 1)) {
    double weights = 0;
    for (const ParamSegment& s : rm.layout->segments()) weights += double(s.count);
    optimizer += k.kernel(k.r.weight_copy, weights);
  }
}

}  // namespace

EngineStepTime engine_step_time(const ModelConfig& c, const LayoutSpec& L, const ClusterSpec& cl, int threads) {
  const int world = L.ranks(), per_node = std::max(1, cl.devices_per_node);
  // Megatron's order (comm/mesh.h): tp fastest, then cp, dp, pp.
  const LinkClass tp_link = axis_link(cl, 1, L.tp, world, per_node), cp_link = axis_link(cl, L.tp, L.cp, world, per_node),
                  dp_link = axis_link(cl, L.tp, L.dp * L.cp, world, per_node),
                  pp_link = axis_link(cl, L.tp * L.cp * L.dp, L.pp, world, per_node),
                  ep_link = axis_link(cl, L.tp, L.ep, world, per_node);
  const Groups g{&tp_link, &cp_link, &dp_link, &pp_link, &ep_link};
  // Ranks beyond the cores share them: all ranks' CPU work over the cores bounds the step.
  const double ranks_here = std::min(world, per_node) * double(std::max(1, threads));
  const Costs k(cl.rates, L.gemm, threads, cl.rates.cores > 0 && ranks_here > cl.rates.cores);
  const double m = L.grad_accum;
  const double share = ranks_here / cl.rates.usable_cores(ranks_here);
  std::vector<double> stage;  // per pipeline rank: one micro-batch's forward + backward
  std::vector<RankCosts> costs;  // the same split as the schedule's timeline needs it
  double cpu = 0, comm_mb = 0, pp_mb = 0, fwd_share = 0, dp_comm = 0, optimizer = 0, hidden_bytes = 0;
  const int dp_on_node = ranks_on_one_node(L.tp, L.dp * L.cp, world, per_node);
  EngineStepTime t;
  for (int r = 0; r < L.pp; ++r) {
    const RankModel rm = rank_model(c, L, r);
    // The critical path runs at the busiest ep rank's routed rows; the CPU all ranks share at the
    // mean rank's (their sum is the batch's routes either way).
    const double ep_load = cl.routing.factor(L.ep, c.moe.n_experts, c.moe.top_k);
    const MicroBatchCost mb = micro_batch(c, L, rm, k, g, ep_load, share);
    const MicroBatchCost mean = ep_load == 1 ? mb : micro_batch(c, L, rm, k, g, 1.0, share);
    if (stage.empty() || mb.fwd + mb.bwd > *std::max_element(stage.begin(), stage.end()))
      t.gemm = m * mb.gemm, t.attention = m * mb.attention, t.elementwise = m * mb.elementwise;
    stage.push_back(mb.fwd + mb.bwd);
    costs.push_back(RankCosts{mb.fwd, mb.bwd, mb.weight});
    fwd_share = std::max(fwd_share, mb.fwd / (mb.fwd + mb.bwd));
    comm_mb = std::max(comm_mb, mb.comm), pp_mb = std::max(pp_mb, mb.pp_comm);  // pp's is the same on every rank
    double dc = 0, opt = 0, hidden = 0;
    const double wall = std::max(1.0, share);  // ranks sharing cores compute at 1 / share of one
    per_step(L, rm, k, *g.dp, dp_on_node, wall * mb.fwd, wall * mb.bwd, dc, opt, hidden);
    dp_comm = std::max(dp_comm, dc), optimizer = std::max(optimizer, opt);
    hidden_bytes = std::max(hidden_bytes, hidden);  // the busiest node's
    cpu += (m * (mean.fwd + mean.bwd + mb.ep_spin) + opt) / L.pp;  // the average rank's CPU work
  }
  t.optimizer = optimizer;
  const double slowest = *std::max_element(stage.begin(), stage.end());
  double fill = 0;  // the first micro-batch's way through the other stages, by schedule
  for (double s : stage) fill += s;
  const double fill_share = L.schedule == PipeSchedule::interleaved ? 1.0 / L.chunks
                            : L.schedule == PipeSchedule::zb_h1     ? fwd_share
                                                                    : 1.0;
  fill = (fill - slowest) * fill_share;
  // The schedule's own timeline with every stage's costs, where it can be built (the closed
  // form above otherwise): its makespan less the slowest stage's work is what the step waits.
  if (L.pp > 1)
    if (const double makespan = pipeline_makespan(L, costs); makespan > 0) fill = std::max(0.0, makespan - m * slowest);
  t.compute = m * slowest;
  t.bubble = L.pp > 1 ? fill : 0;
  const double blocking = m * (comm_mb + pp_mb);  // every collective and transfer sits on the critical path
  t.tp_comm = m * comm_mb, t.pp_comm = m * pp_mb;
  t.dp_comm = dp_comm;
  t.other = optimizer + cl.rates.step_overhead;
  const double critical = t.compute + t.bubble + blocking + t.dp_comm + optimizer;
  double busy = share > 1 ? std::max(critical, share * cpu + blocking + t.dp_comm) : critical;
  // The kernel's work for the bytes a node's ranks send across and receive (TCP, the driver, the
  // qdisc, softirq) runs on the cores they compute on. Only the bytes the compute hides are
  // charged: while the ranks wait on the link the kernel works on the cores they leave, and the
  // link's fitted time (calibrate's ranks waited too) already holds whatever that costs. Hidden
  // bytes take their CPU from the compute: it joins the node's CPU work over the cores the job's
  // ranks and the kernel get together, so cores the ranks leave idle absorb it first. Collectives
  // the ranks block on (tp, cp, ep, pp's sends) wait on the link: not charged.
  t.link_cpu = g.dp->cpu_seconds_per_byte * 2 * std::min(world, per_node) * hidden_bytes;
  if (t.link_cpu > 0) {
    const double cores = cl.rates.usable_cores(std::max(ranks_here, double(cl.rates.cores)));
    busy = std::max(busy, (ranks_here * cpu + t.link_cpu) / cores + blocking + t.dp_comm);
  }
  t.core_sharing = busy - critical;
  t.step = busy + cl.rates.step_overhead;
  return t;
}

}  // namespace ff
