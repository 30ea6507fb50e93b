// The engine's step-time model (plan/engine_step_time.h) on synthetic clusters whose rates make
// the expected numbers computable by hand, and the link classes: a group that spans nodes is
// costed with the across-node link, one inside a node with the same-node link.
#include <gtest/gtest.h>

#include <stdexcept>
#include <toml++/toml.h>

#include "model/model_config.h"
#include "parallel/tensor/tensor_plan.h"
#include "plan/cluster.h"
#include "plan/node_first.h"
#include "plan/search.h"
#include "plan/step_time.h"

using namespace ff;

namespace {

ModelConfig model(int n_experts = 0) {
  ModelConfig c;
  c.vocab_size = 256, c.dim = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160, c.seq_len = 32;
  c.tied_embeddings = false;
  if (n_experts) c.moe.n_experts = n_experts, c.moe.top_k = 2, c.moe.expert_ffn_dim = 48;
  c.validate();
  return c;
}

// Only GEMMs cost anything: one flat GEMM rate, (almost) free attention, element-wise work and links.
ClusterSpec gemm_only(int cores, double rate = 1e10) {
  ClusterSpec cl;
  cl.name = "synthetic", cl.engine = true, cl.devices_per_node = 64, cl.memory_bytes = 1e15, cl.peak_flops = 1e12;
  cl.rates.cores = cores;
  cl.rates.gemm_fp32.add(1, 1, rate);
  cl.rates.gemm_bf16.add(1, 1, 2 * rate);
  cl.rates.attention.points = {{1, 1e-30}};
  cl.rates.bandwidth.points = {{1, 1e30}};
  cl.same_node = cl.across_nodes = LinkClass::uniform(1e-30, 1e30);
  return cl;
}

LayoutSpec layout(const char* text, int ranks) {
  std::set<std::string> given;
  LayoutSpec L = parse_layout(text, &given);
  if (!given.count("dp")) L.dp = ranks / (L.tp * L.pp * L.cp);
  return L;
}

}  // namespace

TEST(EngineStepModel, GemmTimeIsSixTokensTimesMatmulParametersOverTheRate) {
  // Serial, one micro-batch of 4 x 32 tokens: every linear's forward is 2 N in out FLOPs and
  // its backward twice that, so compute = 6 N (matmul parameters) / rate.
  const ModelConfig c = model();
  const double N = 4 * 32, C = 64, Q = (4 + 2 * 2) * 16, F = 160, V = 256;
  const double matmul = 4 * (C * Q + C * C + 3 * C * F) + C * V;
  const LayoutPrediction p = predict_layout(c, layout("mb=4", 1), gemm_only(2), 1);
  EXPECT_NEAR(p.compute, 6 * N * matmul / 1e10, 1e-9);
  // bf16 GEMMs at twice the rate take half the time.
  const LayoutPrediction b = predict_layout(c, layout("mb=4,precision=bf16", 1), gemm_only(2), 1);
  EXPECT_NEAR(b.compute, p.compute / 2, 1e-9);
  // Full recompute repeats the blocks' forward (not the head's): 2 N more per block parameter.
  const LayoutPrediction f = predict_layout(c, layout("mb=4,recompute=full", 1), gemm_only(2), 1);
  EXPECT_NEAR(f.compute, p.compute + 2 * N * 4 * (C * Q + C * C + 3 * C * F) / 1e10, 1e-9);
}

TEST(EngineStepModel, RanksBeyondTheCoresShareThem) {
  // dp 4 on 4 cores: each rank alone on a core; on 2 cores: twice the time (MPI waits idle).
  const ModelConfig c = model();
  const LayoutSpec L = layout("dp=4,mb=2", 4);
  const double four = predict_layout(c, L, gemm_only(4), 1).step_seconds;
  const double two = predict_layout(c, L, gemm_only(2), 1).step_seconds;
  EXPECT_NEAR(two / four, 2.0, 1e-6);
  // Two threads per rank on 4 cores for 4 ranks: also oversubscribed, but each GEMM on 2 threads.
  EXPECT_NEAR(predict_layout(c, L, gemm_only(4), 2).step_seconds, four, 1e-9);
}

TEST(EngineStepModel, PipelineBubbleBySchedule) {
  // Two stages on two cores, GEMM-only: 1F1B and GPipe fill the pipeline with the other stage's
  // whole micro-batch (forward + backward), ZB-H1 only with its forward: a third of it.
  const ModelConfig c = model();
  const ClusterSpec cl = gemm_only(2);
  const LayoutPrediction a = predict_layout(c, layout("pp=2,1f1b,mb=2,m=4", 2), cl, 1);
  const LayoutPrediction g = predict_layout(c, layout("pp=2,gpipe,mb=2,m=4", 2), cl, 1);
  const LayoutPrediction z = predict_layout(c, layout("pp=2,zb-h1,mb=2,m=4", 2), cl, 1);
  EXPECT_GT(a.bubble, 0);
  EXPECT_NEAR(a.bubble, g.bubble, 1e-12);  // the last stage is the slowest: both schedules wait the same
  EXPECT_NEAR(z.bubble, a.bubble / 3, 1e-12);
  // The stages: the first holds two blocks, the last two blocks and the head; per micro-batch of
  // 2 x 32 tokens, 6 N P / rate each; the bubble is the smaller stage's (the head's is larger).
  const double N = 2 * 32, C = 64, Q = 128, F = 160, V = 256, block = C * Q + C * C + 3 * C * F;
  EXPECT_NEAR(a.bubble, 6 * N * 2 * block / 1e10, 1e-9);
  EXPECT_NEAR(a.compute, 4 * 6 * N * (2 * block + C * V) / 1e10, 1e-9);
}

TEST(LinkClasses, GroupSpansNodes) {
  EXPECT_FALSE(group_spans_nodes(1, 2, 4, 2));  // tp 2 inside nodes of 2
  EXPECT_TRUE(group_spans_nodes(2, 2, 4, 2));   // dp 2 over them
  EXPECT_TRUE(group_spans_nodes(1, 4, 4, 2));
  EXPECT_FALSE(group_spans_nodes(2, 2, 8, 4));  // tp 2 x dp 2 inside nodes of 4
  EXPECT_TRUE(group_spans_nodes(4, 2, 8, 4));   // pp 2 over them
  EXPECT_FALSE(group_spans_nodes(4, 2, 8, 8));
}

TEST(LinkClasses, AGroupSpanningNodesIsCostedWithTheAcrossNodeLink) {
  // dp 2 x tp 2 on nodes of 2 ranks: the tp pairs sit inside a node, the dp pairs span two.
  // Compute that takes no time, so no communication hides behind it (plan/dp_overlap.h).
  const ModelConfig c = model();
  ClusterSpec cl = gemm_only(2, 1e30);
  cl.devices_per_node = 2;
  cl.same_node = LinkClass::uniform(1e-6, 1e9);
  cl.across_nodes = LinkClass::uniform(1e-5, 1e7);
  const LayoutSpec L = layout("tp=2,mb=2,zero=0", 4);
  const LayoutPrediction p = predict_layout(c, L, cl, 1);
  // tp: per block four all-reduces of one (N, C) fp32 tensor, two more on the head, and three of
  // N floats (the vocab-parallel loss); the ring over 2 ranks: 2 ((n-1) alpha + (n-1)/n bytes / bw).
  const double N = 2 * 32, act = N * 64 * 4;
  auto ar = [](double bytes, double alpha, double bw) { return 2 * (alpha + bytes / 2 / bw); };
  EXPECT_NEAR(p.tp_comm, (4 * 4 + 2) * ar(act, 1e-6, 1e9) + 3 * ar(N * 4, 1e-6, 1e9), 1e-12);
  // dp: the all-reduce of the rank's gradient (tp rank 0's slices) on the across-node link, in
  // one piece: DDP's 4 MiB bucket holds all of this small model's segments.
  const PlanSlicer slicer(c, 2, 0);
  const ParamLayout sliced(c, &slicer);
  ASSERT_LT(4.0 * double(sliced.total()), 4.0 * (1 << 20));
  const double across = ar(4.0 * double(sliced.total()), 1e-5, 1e7), same = ar(4.0 * double(sliced.total()), 1e-6, 1e9);
  EXPECT_NEAR(p.dp_comm, across, 1e-9);
  ClusterSpec inside = cl;
  inside.devices_per_node = 4;  // the same job on one node of 4: every group same-node
  const LayoutPrediction q = predict_layout(c, L, inside, 1);
  EXPECT_NEAR(q.tp_comm, p.tp_comm, 1e-12);
  EXPECT_NEAR(q.dp_comm, same, 1e-12);
}

// Calibrate fits the across-node class on 4 ranks, 2 per node, all sending at once: a node's link
// then carries 2 ranks x 2/3 of each one's bytes (2 of its 3 peers are off the node). A dp pair
// across nodes (1 rank of it per node), while both ranks of each node reduce at once, puts 2 x 1
// of the bytes on it: the all-reduce's bandwidth is 1.5x lower than the fit's. A group like the
// fit's is costed as fitted; point-to-point (fitted on one pair) shares the link among the node's
// sending ranks; a file without the fit's shape, or a hardware description, is taken as it is.
TEST(LinkClasses, RanksOfANodeShareItsLinkAcrossNodes) {
  LinkClass fit = LinkClass::uniform(1e-5, 1.2e8);
  fit.fit_ranks = 4, fit.fit_ranks_per_node = 2;
  const LinkClass pair = fit.shared_by(2, 1, 2), like_fit = fit.shared_by(4, 2, 2), four_alone = fit.shared_by(4, 1, 1);
  EXPECT_DOUBLE_EQ(pair.bandwidth[int(Coll::all_reduce)], 1.2e8 / 1.5);
  EXPECT_DOUBLE_EQ(pair.bandwidth[int(Coll::reduce_scatter)], 1.2e8 / 1.5);
  EXPECT_DOUBLE_EQ(pair.bandwidth[int(Coll::p2p)], 1.2e8 / 2);
  EXPECT_DOUBLE_EQ(pair.alpha[int(Coll::all_reduce)], 1e-5);
  EXPECT_DOUBLE_EQ(like_fit.bandwidth[int(Coll::all_gather)], 1.2e8);
  // 4 ranks on 4 nodes, one sending per node: 1 x 3/3 against the fit's 4/3.
  EXPECT_DOUBLE_EQ(four_alone.bandwidth[int(Coll::all_gather)], 1.2e8 * 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(LinkClass::uniform(1e-5, 1.2e8).shared_by(2, 1, 2).bandwidth[int(Coll::all_reduce)], 1.2e8);
  // The fit's shape travels in the cluster file.
  toml::table t = toml::parse(link_class_to_toml(fit, "across_nodes"));
  const LinkClass back = read_link_class(t["across_nodes"].as_table(), LinkClass{}, "x.toml", "across_nodes");
  EXPECT_EQ(back.fit_ranks, 4);
  EXPECT_EQ(back.fit_ranks_per_node, 2);
  toml::table bad = toml::parse("[across_nodes]\nfitted_on = [4]\n");
  EXPECT_THROW(read_link_class(bad["across_nodes"].as_table(), LinkClass{}, "x.toml", "across_nodes"), std::runtime_error);
}

// A group with 2 ranks on each of 2 nodes goes node first from Comm's sizes on (1 MiB): the stages
// inside the node on the same-node link, across with half the buffer, the buffer cut into 4 MiB
// blocks whose stages overlap (one block's stages, then the slowest once per further block).
// Below the size, in another group size, or with one rank per node: the flat ring.
TEST(LinkClasses, ACollectiveSpanningNodesGoesNodeFirstFromCommsSizes) {
  const LinkClass same = LinkClass::uniform(1e-6, 1e9), across = LinkClass::uniform(1e-5, 1e8);
  LinkClass group = across;
  group.node_first = node_first_form(same, across, 4, 2, 2);
  ASSERT_TRUE(group.node_first);
  const double MiB = 1 << 20;
  // Ring formulas over n ranks (cost_rates.h): all-reduce 2 ((n-1) a + (n-1)/n S / b), the others once.
  auto ring = [](double passes, int n, double S, double a, double b) { return passes * ((n - 1) * a + (n - 1.0) / n * S / b); };
  EXPECT_DOUBLE_EQ(group.seconds(Coll::all_reduce, 0.5 * MiB, 4), ring(2, 4, 0.5 * MiB, 1e-5, 1e8));
  // 2 MiB all-reduce: one block; reduce-scatter inside, all-reduce of 1 MiB across, all-gather inside.
  const double in2 = ring(1, 2, 2 * MiB, 1e-6, 1e9);
  EXPECT_NEAR(group.seconds(Coll::all_reduce, 2 * MiB, 4), in2 + ring(2, 2, 1 * MiB, 1e-5, 1e8) + in2, 1e-15);
  // 16 MiB: 4 blocks of 4 MiB; the across stage (2 MiB of each block) is the slowest.
  const double in4 = ring(1, 2, 4 * MiB, 1e-6, 1e9), cross = ring(2, 2, 2 * MiB, 1e-5, 1e8);
  EXPECT_NEAR(group.seconds(Coll::all_reduce, 16 * MiB, 4), in4 + cross + in4 + 3 * cross, 1e-15);
  // Reduce-scatter of a 16 MiB input: the node's sums inside, then each across to its owner.
  const double rs_cross = ring(1, 2, 2 * MiB, 1e-5, 1e8);
  EXPECT_NEAR(group.seconds(Coll::reduce_scatter, 16 * MiB, 4), in4 + rs_cross + 3 * rs_cross, 1e-15);
  // All-gather of a 2 MiB output: the own 1 MiB across, then 2 MiB inside.
  EXPECT_NEAR(group.seconds(Coll::all_gather, 2 * MiB, 4), ring(1, 2, 1 * MiB, 1e-5, 1e8) + in2, 1e-15);
  EXPECT_DOUBLE_EQ(group.seconds(Coll::all_reduce, 2 * MiB, 2), ring(2, 2, 2 * MiB, 1e-5, 1e8));  // another group
  EXPECT_DOUBLE_EQ(group.seconds(Coll::all_to_all, 2 * MiB, 4), ring(1, 4, 2 * MiB, 1e-5, 1e8));  // never node first
  EXPECT_FALSE(node_first_form(same, across, 2, 1, 2));  // one rank per node: nothing to reduce inside first
  // The across stage's pairs share their node's link with the node's other ranks (shared_by):
  // fitted on 4 ranks, 2 per node, a pair of one rank per node with both ranks crossing at once
  // sees 1.5x less bandwidth (RanksOfANodeShareItsLinkAcrossNodes).
  LinkClass fitted = across;
  fitted.fit_ranks = 4, fitted.fit_ranks_per_node = 2;
  EXPECT_DOUBLE_EQ(node_first_form(same, fitted, 4, 2, 2)->across.bandwidth[int(Coll::all_reduce)], 1e8 / 1.5);
}

TEST(PlanSearch, EnumeratesContextExpertParallelismAndPrecision) {
  const PlanRequest req{.ranks = 4, .global_batch = 4, .threads = 1, .max_micro_batch = 4};
  const PlanResult r = search_layouts(model(4), gemm_only(4), req);
  bool cp_a2a = false, cp_ring = false, cp_ag = false, ep = false, bf16 = false;
  for (const LayoutPrediction& p : r.ranked) {
    cp_ring |= p.layout.cp == 2 && p.layout.cp_comm == CpComm::ring;
    cp_ag |= p.layout.cp == 2 && p.layout.cp_comm == CpComm::allgather;
    cp_a2a |= p.layout.cp == 2 && p.layout.cp_comm == CpComm::a2a;
    ep |= p.layout.ep == 4;
    bf16 |= p.layout.gemm == Precision::bf16;
  }
  EXPECT_TRUE(cp_ring && cp_ag && cp_a2a && ep && bf16);
  // The layout string round-trips through parse_layout.
  for (const LayoutPrediction& p : r.ranked) ASSERT_EQ(parse_layout(p.layout.str()).str(), p.layout.str());
  // Nothing the trainer refuses: 1F1B needs at least as many micro-batches as stages.
  for (const LayoutPrediction& p : r.ranked) {
    if (p.layout.pp > 1 && p.layout.schedule == PipeSchedule::one_f_one_b) {
      EXPECT_GE(p.layout.grad_accum, p.layout.pp) << p.layout.str();
    }
  }
}
