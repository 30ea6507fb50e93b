// The step model's terms for work the engine does around its kernels and exchanges, each checked
// against the work counted here by hand from the engine's code on a synthetic cluster with flat
// rates (plan/exchange_work.h, plan/pipeline_timeline.h, the attention tables of cost_rates.h):
//  - attention's forward at its own calibrated rate (what selective recompute repeats), and the
//    bf16 kernels' rates for a bf16 layout;
//  - cp a2a's five blocking all-to-alls, their bytes, and the reshuffling copies around them;
//  - cp ring's and all-gather's full and diagonal blocks at their calibrated rates, counted per rank;
//  - an MoE block's routed-row copies and gated sums, and ep's exchange of row counts;
//  - the pipeline's wait from the schedule's timeline: with a slow first stage 1F1B waits less
//    than GPipe, by the closed forms of the two-stage timelines.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/model_config.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "synthetic_cluster.h"
#include "plan/cluster.h"
#include "plan/search.h"
#include "plan/step_time.h"

using namespace ff;

namespace {
namespace exchange_terms_test {

constexpr double kAttn = 7e-11, kFwd = 3e-11, kAttnB = 5e-11, kFwdB = 2e-11, kBlock = 11e-11, kBlockB = 9e-11, kDiag = 8e-11,
                 kDiagB = 6e-11;

ModelConfig model(int n_layers = 4, int n_experts = 0) {
  ModelConfig c;
  c.vocab_size = 256, c.dim = 64, c.n_layers = n_layers, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160;
  c.seq_len = 32, c.tied_embeddings = false;
  if (n_experts) c.moe.n_experts = n_experts, c.moe.top_k = 2, c.moe.expert_ffn_dim = 48;
  c.validate();
  return c;
}

// GEMMs at 1e10 FLOP/s, flat kernel rates, the attention tables above, free links, and
// streams at `bandwidth` bytes/s.
ClusterSpec cluster(double bandwidth = 1e30) {
  ClusterSpec cl = synthetic_engine_cluster(bandwidth);
  cl.rates.attention_dim.add(1, 1, kAttn);
  cl.rates.attention_fwd_dim.add(1, 1, kFwd);
  cl.rates.attention_dim_bf16.add(1, 1, kAttnB);
  cl.rates.attention_fwd_dim_bf16.add(1, 1, kFwdB);
  return cl;
}

LayoutPrediction predict(const ModelConfig& c, const char* text, const ClusterSpec& cl) {
  return predict_layout(c, parse_layout(text), cl, 1);
}

}  // namespace exchange_terms_test
}  // namespace

using namespace exchange_terms_test;

TEST(ExchangeTerms, SelectiveRecomputeRepeatsAttentionsForwardAtItsCalibratedRate) {
  const ModelConfig c = model();
  const ClusterSpec cl = cluster();
  const double units = 4.0 * 4 * 32 * 32 * 16, L = 4;  // B H T^2 D per block, mb 4
  const LayoutPrediction p = predict(c, "mb=4", cl), s = predict(c, "mb=4,recompute=selective", cl);
  EXPECT_NEAR(p.attention, L * units * kAttn, 1e-15);
  EXPECT_NEAR(s.attention - p.attention, L * units * kFwd, 1e-15);
  // bf16 GEMM inputs run the bf16 attention kernels: both tables switch.
  const LayoutPrediction b = predict(c, "mb=4,precision=bf16", cl);
  const LayoutPrediction bs = predict(c, "mb=4,precision=bf16,recompute=selective", cl);
  EXPECT_NEAR(b.attention, L * units * kAttnB, 1e-15);
  EXPECT_NEAR(bs.attention - b.attention, L * units * kFwdB, 1e-15);
  // A file without the forward's table: 2 of the 7 T^2 D products, as before.
  ClusterSpec old = cl;
  old.rates.attention_fwd_dim = GemmTable{};
  EXPECT_NEAR(predict(c, "mb=4,recompute=selective", old).attention - p.attention, L * units * kAttn * 2 / 7, 1e-15);
}

TEST(ExchangeTerms, ContextParallelBlocksRunAtTheCalibratedBlockRates) {
  const ModelConfig c = model();
  ClusterSpec cl = cluster();
  const double L = 4, old_units = 4.0 * 4 * 32 * 32 * 16 / 2;  // mb 4, H 4, T 32, D 16, over cp 2
  // A file without the block tables, or with the full blocks' alone: the whole-sequence kernel's
  // rate on 1/cp of the work.
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=ring,mb=4", cl).attention, L * old_units * kAttn, 1e-15);
  cl.rates.cp_block_dim.add(1, 1, kBlock);
  cl.rates.cp_block_dim_bf16.add(1, 1, kBlockB);
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=ring,mb=4", cl).attention, L * old_units * kAttn, 1e-15);
  cl.rates.cp_diag_dim.add(1, 1, kDiag);
  cl.rates.cp_diag_dim_bf16.add(1, 1, kDiagB);
  // cp 2 cuts the 32 tokens into 4 chunks of 8; a rank holds chunks r and 3 - r, which meet
  // r + 3 - r = 3 earlier chunks (full blocks) and themselves (2 diagonals).
  const double units = 4.0 * 4 * 8 * 8 * 16, rank = 3 * kBlock + 2 * kDiag, rank_b = 3 * kBlockB + 2 * kDiagB;
  for (const char* mode : {"ring", "allgather"}) {
    const std::string layout = std::string("cp=2,cp_comm=") + mode + ",mb=4";
    EXPECT_NEAR(predict(c, layout.c_str(), cl).attention, L * units * rank, 1e-15) << mode;
    // Selective recompute repeats the forward: its share as the whole-sequence kernel's.
    EXPECT_NEAR(predict(c, (layout + ",recompute=selective").c_str(), cl).attention,
                L * units * rank * (1 + kFwd / kAttn), 1e-15) << mode;
    EXPECT_NEAR(predict(c, (layout + ",precision=bf16").c_str(), cl).attention, L * units * rank_b, 1e-15) << mode;
  }
  // a2a runs the whole-sequence kernel on a share of the heads: the block tables do not apply.
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=a2a,mb=4", cl).attention, L * old_units * kAttn, 1e-15);
  // A 4-rank ring: chunks of 32 / 8 = 4 tokens, 7 full blocks and 2 diagonals per rank.
  const double units4 = 4.0 * 4 * 4 * 4 * 16;
  EXPECT_NEAR(predict(c, "cp=4,cp_comm=ring,mb=4", cl).attention, L * units4 * (7 * kBlock + 2 * kDiag), 1e-15);
}

TEST(ExchangeTerms, UlyssesPaysFiveBlockingAllToAllsAndItsReshuffles) {
  const ModelConfig c = model();
  const double rows = 4.0 * 32 / 2, Q = 128, A = 64, H = 4, L = 4;  // mb 4 over cp 2; per block
  // Five blocking all-to-alls per block: each pays the calibrated overhead.
  ClusterSpec over = cluster();
  over.rates.collective_overhead = 1e-3;
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=a2a,mb=4", over).tp_comm - predict(c, "cp=2,cp_comm=a2a,mb=4", cluster()).tp_comm,
              L * 5 * 1e-3, 1e-12);
  // Their bytes, one rank's send buffer each: q/k/v and [out | lse] forward; q/k/v, [dout | out |
  // lse] and dq/dk/dv backward; an all-to-all over 2 ranks moves half of it over the link.
  ClusterSpec link = cluster();
  link.same_node.bandwidth[int(Coll::all_to_all)] = 1e9;
  const double sends = rows * 4 * (Q + (A + H) + Q + (2 * A + H) + Q);
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=a2a,mb=4", link).tp_comm, L * 0.5 * sends / 1e9, 1e-12);
  // The copies around them at 1e10 bytes/s, against the ring (same attention work, no copies),
  // per row in bytes: a copy 8 per float, a fill 4, an adding unpack 12.
  const double forward = 8 * Q                   // pack q/k/v by destination
                         + 8 * Q                 // received rows into sequence order
                         + 8 * A + 8 * H         // the output spread beside its lse
                         + 8 * (A + H)           // back to the senders' rows
                         + 4 * A + 4 * H         // zero att and the lse rows
                         + 12 * (A + H)          // add the received heads
                         + 8 * H;                // lse rows to (B, H, T)
  const double backward = 8 * Q + 8 * Q          // q/k/v again: pack, order
                          + 8 * H                // lse to rows
                          + 8 * (2 * A + H) * 2  // dout/out/lse: pack, order
                          + 8 * 2 * A            // split dout and out
                          + 8 * H                // rows to lse
                          + 4 * Q                // zero dq/dk/dv
                          + 8 * Q + 12 * Q;      // to rows, add into dq/dk/dv
  const ClusterSpec mem = cluster(1e10);
  EXPECT_NEAR(predict(c, "cp=2,cp_comm=a2a,mb=4", mem).elementwise - predict(c, "cp=2,cp_comm=ring,mb=4", mem).elementwise,
              L * rows * (forward + backward) / 1e10, 1e-12);
}

TEST(ExchangeTerms, MoeBlocksPayTheirRoutedCopiesAndEpItsCountExchange) {
  const ModelConfig c = model(4, 4);
  const double N = 4 * 32, C = 64, K = 2, Q = 128, L = 4, routed = N * K;
  // Every streamed byte at 1e10 bytes/s, against free streams: the embedding (a row read and
  // written, forward and backward), zeroing q/k/v's gradient per block and d_resid at the head,
  // and per MoE block: forward the gather into expert order, the exchange's regrouping both ways,
  // the residual into the output, each route's gated sum (read 2, write 1); backward the gated
  // output gradient with its dot product (read 2, write 1), the regroupings, the input gradients
  // added back (read 2, write 1), the zeroed d_ln.
  const double moe = C * (8 * routed + 8 * routed * 2 + 8 * N + 12 * routed) +
                     C * (12 * routed + 8 * routed * 2 + 12 * routed + 4 * N);
  const double streamed = 2 * 8 * N * C + L * 4 * N * Q + 4 * N * C + L * moe;
  const double at = predict(c, "mb=4", cluster(1e10)).elementwise, free = predict(c, "mb=4", cluster()).elementwise;
  EXPECT_NEAR(at - free, streamed / 1e10, 1e-12);
  // ep 2: per block the blocking exchange of row counts, and dispatch and combine both ways.
  ClusterSpec over = cluster();
  over.rates.collective_overhead = 1e-3;
  EXPECT_NEAR(predict(c, "ep=2,mb=4", over).tp_comm - predict(c, "ep=2,mb=4", cluster()).tp_comm, L * 5 * 1e-3, 1e-12);
}

TEST(ExchangeTerms, PipelineWaitsFollowTheSchedulesTimeline) {
  // Three blocks on two stages: the first takes two, the last one and the head; with a block's
  // GEMMs larger than the head's, the first stage is the slowest in both passes.
  const ModelConfig c = model(3);
  const StageSplit split = split_model(c, 2, 1);
  ASSERT_EQ(split.stages[0].last_layer - split.stages[0].first_layer, 2);
  const double N = 2 * 32, C = 64, Q = 128, F = 160, V = 256, block = C * Q + C * C + 3 * C * F, m = 4;
  const double f0 = 2 * N * 2 * block / 1e10, b0 = 2 * f0;  // GEMM-only: a backward is two forwards
  const double f1 = 2 * N * (block + C * V) / 1e10, b1 = 2 * f1;
  ASSERT_GT(f0, f1);
  ClusterSpec cl = cluster();
  for (RateCurve* k : {&cl.rates.optimizer, &cl.rates.rmsnorm, &cl.rates.rope, &cl.rates.swiglu,
                       &cl.rates.cross_entropy, &cl.rates.weight_copy})
    k->points = {{1, 1e-30}};
  for (GemmTable* t : {&cl.rates.attention_dim, &cl.rates.attention_fwd_dim})
    *t = GemmTable{}, t->add(1, 1, 1e-30);
  const LayoutPrediction g = predict(c, "pp=2,gpipe,mb=2,m=4", cl), o = predict(c, "pp=2,1f1b,mb=2,m=4", cl);
  // GPipe: all forwards, then the last stage's first backward, then the first stage's backwards:
  // m f0 + (f1 + b1) + m b0.
  EXPECT_NEAR(g.compute + g.bubble, m * f0 + f1 + b1 + m * b0, 1e-9);
  // 1F1B: the first backward starts when the first gradient returns (S1), then B F pairs, and the
  // last backward waits for the last stage's last micro-batch if that is longer than a backward.
  const double S1 = std::max(2 * f0, f0 + f1 + b1);
  EXPECT_NEAR(o.compute + o.bubble, S1 + (m - 1) * b0 + (m - 2) * f0 + std::max(b0, f1 + b1), 1e-9);
  EXPECT_LT(o.bubble, g.bubble);
}
