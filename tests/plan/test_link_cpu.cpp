// The kernel's CPU for the bytes a node sends across the link (LinkClass::cpu_seconds_per_byte):
// the bytes a collective puts off a node, the cluster file's key, and the step model's charge,
// each worked by hand: only the bytes the compute hides are charged, on the cores the node's ranks
// compute on, after the cores they leave idle.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <stdexcept>
#include <string>

#include "model/model_config.h"
#include "plan/cluster.h"
#include "plan/node_first.h"
#include "plan/step_time.h"

using namespace ff;

namespace {

// 4 layers of width 64, 4 heads of 16 over 2 KV heads, MLP 160, vocabulary 256, head untied.
ModelConfig model() {
  ModelConfig c;
  c.vocab_size = 256, c.dim = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160, c.seq_len = 32;
  c.tied_embeddings = false;
  c.validate();
  return c;
}
constexpr double C = 64, Q = (4 + 2 * 2) * 16, F = 160, V = 256;
constexpr double kBlockParameters = C * Q + C * C + 3 * C * F + 2 * C;  // q/k/v, o, MLP, two norms
constexpr double kHeadParameters = C + V * C;                           // the final norm and the head

// Two nodes of 2 ranks, `cores` each; only GEMMs cost time (one flat rate), links nearly free.
ClusterSpec two_nodes(int cores, double cpu_per_byte) {
  ClusterSpec cl;
  cl.name = "synthetic", cl.engine = true, cl.devices_per_node = 2, cl.memory_bytes = 1e15, cl.peak_flops = 1e12;
  cl.rates.cores = cores;
  cl.rates.gemm_fp32.add(1, 1, 1e10);
  cl.rates.attention.points = {{1, 1e-30}};
  cl.rates.bandwidth.points = {{1, 1e30}};
  cl.same_node = LinkClass::uniform(1e-30, 1e30);
  // Fast enough that each reduce-scatter ends long before the next segment's backward does.
  cl.across_nodes = LinkClass::uniform(1e-30, 1e12);
  cl.across_nodes.cpu_seconds_per_byte = cpu_per_byte;
  return cl;
}

LayoutSpec layout(const char* text) { return parse_layout(text, nullptr); }

// One rank's compute for dp 4 at micro-batch 2: 6 N (matmul parameters) / rate.
double compute_by_hand() {
  const double N = 2 * 32, matmul = 4 * (C * Q + C * C + 3 * C * F) + C * V;
  return 6 * N * matmul / 1e10;
}

}  // namespace

TEST(LinkCpu, BytesACollectivePutsOffTheNode) {
  // All-reduce of 1 MB over 4 ranks, 2 per node: two phases of 3 chunks of 1/4 MB, 2 of them to
  // the other node: 1 MB sent off the node per rank.
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::all_reduce, 1e6, 4, 2), 1e6);
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::all_reduce, 1e6, 2, 1), 1e6);        // a pair across: half each phase
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::reduce_scatter, 1e6, 4, 2), 0.5e6);  // one phase
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::all_gather, 1e6, 8, 2), 0.75e6);     // 6 of 8 chunks
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::all_reduce, 1e6, 4, 4), 0.0);        // the group inside one node
  EXPECT_DOUBLE_EQ(LinkClass{}.off_node_bytes(Coll::p2p, 1e6, 2, 1), 1e6);
  // Comm's node-first forms (from 1 MiB): the node's ranks each cross with 1/2 of the flat bytes.
  LinkClass across = LinkClass::uniform(1e-5, 1e8);
  across.node_first = node_first_form(LinkClass::uniform(1e-6, 1e9), across, 4, 2, 2);
  EXPECT_DOUBLE_EQ(across.off_node_bytes(Coll::all_reduce, 4e6, 4, 2), 2e6);
  EXPECT_DOUBLE_EQ(across.off_node_bytes(Coll::reduce_scatter, 4e6, 4, 2), 1e6);
  EXPECT_DOUBLE_EQ(across.off_node_bytes(Coll::all_reduce, 0.5e6, 4, 2), 0.5e6);  // below 1 MiB: flat
}

TEST(LinkCpu, TheClusterFileKeyRoundTripsAndBadValuesAreNamed) {
  LinkClass l = LinkClass::uniform(1e-5, 1e8);
  l.cpu_seconds_per_byte = 2.5e-9;
  toml::table t = toml::parse(link_class_to_toml(l, "across_nodes"));
  EXPECT_DOUBLE_EQ(
      read_link_class(t["across_nodes"].as_table(), LinkClass{}, "c.toml", "across_nodes").cpu_seconds_per_byte,
      2.5e-9);
  // Not measured: not written, read back as 0 (older files: no charge).
  const std::string plain = link_class_to_toml(LinkClass::uniform(1e-5, 1e8), "across_nodes");
  EXPECT_EQ(plain.find("cpu_seconds_per_byte"), std::string::npos);
  toml::table old = toml::parse(plain);
  EXPECT_EQ(read_link_class(old["across_nodes"].as_table(), LinkClass{}, "c.toml", "across_nodes").cpu_seconds_per_byte,
            0.0);
  for (const char* bad : {"-1e-9", "\"fast\"", "nan", "inf", "[1e-9]"}) {
    toml::table b = toml::parse(std::string("[across_nodes]\ncpu_seconds_per_byte = ") + bad + "\n");
    try {
      read_link_class(b["across_nodes"].as_table(), LinkClass{}, "c.toml", "across_nodes");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'c.toml'"), std::string::npos) << what;
      EXPECT_NE(what.find("[across_nodes] cpu_seconds_per_byte is a number >= 0"), std::string::npos) << what;
    }
  }
}

// dp 4 ZeRO-2 over two nodes: backward makes the head's gradient first, then blocks 3, 2, 1, 0 and
// the embedding's; each reduce-scatter queues on the link as its gradient is made. Block 0's and
// the embedding's are made as backward ends and are waited for, as are the gathers after the
// optimizer; the head's and blocks 3..1's cross while backward computes. Each sends 2 of its 4
// chunks of 1/4 off the node: per rank 1/2 x 4 bytes x (head + 3 blocks) hidden, as many received,
// on each node's 2 ranks.
TEST(LinkCpu, OnlyTheBytesTheComputeHidesAreChargedOnTheNodesCores) {
  const ModelConfig c = model();
  const LayoutSpec L = layout("dp=4,zero=2,mb=2");
  const double hidden = 0.5 * 4 * (kHeadParameters + 3 * kBlockParameters);
  auto kernel_seconds = [&](double per_byte) { return per_byte * 2 /* sent and received */ * 2 /* ranks */ * hidden; };
  const double cpu = compute_by_hand();

  // 2 cores per node for its 2 ranks: every core computes, so the kernel's seconds stretch the step
  // by themselves over the 2 cores.
  const double per_byte = 1e-9;
  const LayoutPrediction free2 = predict_layout(c, L, two_nodes(2, 0), 1),
                         charged2 = predict_layout(c, L, two_nodes(2, per_byte), 1);
  EXPECT_NEAR(free2.compute, cpu, 1e-9 * cpu);
  EXPECT_NEAR(charged2.link_cpu, kernel_seconds(per_byte), 1e-9 * kernel_seconds(per_byte));
  EXPECT_NEAR(charged2.step_seconds - free2.step_seconds, kernel_seconds(per_byte) / 2, 1e-9 * cpu);
  EXPECT_NEAR(charged2.core_sharing, kernel_seconds(per_byte) / 2, 1e-9 * cpu);
  EXPECT_EQ(free2.link_cpu, 0.0);

  // 1 core per node for 2 ranks: they already share it; the kernel's work adds all its seconds.
  const LayoutPrediction free1 = predict_layout(c, L, two_nodes(1, 0), 1),
                         charged1 = predict_layout(c, L, two_nodes(1, per_byte), 1);
  EXPECT_NEAR(charged1.step_seconds - free1.step_seconds, kernel_seconds(per_byte), 1e-9 * cpu);

  // 4 cores per node, 2 idle: they absorb kernel work up to 2 x the compute; at 4 x it the node's
  // work, 2 ranks' compute plus the kernel's, takes (2 + 4) / 4 = 1.5 x the compute.
  const LayoutPrediction free4 = predict_layout(c, L, two_nodes(4, 0), 1);
  const double absorbed = cpu / kernel_seconds(1.0), overflows = 4 * cpu / kernel_seconds(1.0);
  EXPECT_DOUBLE_EQ(predict_layout(c, L, two_nodes(4, absorbed), 1).step_seconds, free4.step_seconds);
  EXPECT_NEAR(predict_layout(c, L, two_nodes(4, overflows), 1).step_seconds - free4.step_seconds, 0.5 * cpu,
              1e-9 * cpu);
}

// DDP on a model whose segments each fill a 4 MiB bucket of their own (width 256: a block is 2.9 MB,
// the head and the embedding 4 MiB and over): backward all-reduces the head's, then blocks 3, 2, 1,
// while it computes; block 0's and the embedding's after it. An all-reduce over 4 ranks, 2 per
// node, sends 2 x 2/4 of its buffer off the node, and these, over 1 MiB, go node first: half of
// that. Per rank 4 bytes x (head + 3 blocks) / 2 hidden.
TEST(LinkCpu, DdpBucketsMadeBeforeBackwardEndsCrossHidden) {
  ModelConfig c;
  c.vocab_size = 4096, c.dim = 256, c.n_layers = 4, c.n_heads = 8, c.n_kv_heads = 4, c.ffn_dim = 688, c.seq_len = 128;
  c.tied_embeddings = false;
  c.validate();
  const double width = 256, q = (8 + 2 * 4) * 32, ffn = 688, vocab = 4096;
  const double block = width * q + width * width + 3 * width * ffn + 2 * width, head = width + vocab * width;
  const double hidden = 4 * (head + 3 * block) / 2, per_byte = 1e-9;
  const LayoutSpec L = layout("dp=4,mb=2");
  const LayoutPrediction free = predict_layout(c, L, two_nodes(2, 0), 1),
                         charged = predict_layout(c, L, two_nodes(2, per_byte), 1);
  EXPECT_NEAR(charged.link_cpu, per_byte * 2 * 2 * hidden, 1e-9 * charged.link_cpu);
  EXPECT_NEAR(charged.step_seconds - free.step_seconds, per_byte * 2 * 2 * hidden / 2, 1e-9 * free.step_seconds);
}

TEST(LinkCpu, BytesTheRanksWaitForOrThatStayOnTheNodeAreNotCharged) {
  const ModelConfig c = model();
  // DDP: this small model's gradients fill one 4 MiB bucket, all-reduced once backward has made
  // all of it: the ranks wait for the whole transfer, which the link's fitted time already holds.
  const LayoutSpec ddp = layout("dp=4,mb=2");
  const LayoutPrediction free = predict_layout(c, ddp, two_nodes(2, 0), 1),
                         charged = predict_layout(c, ddp, two_nodes(2, 1e-9), 1);
  EXPECT_EQ(charged.link_cpu, 0.0);
  EXPECT_DOUBLE_EQ(charged.step_seconds, free.step_seconds);
  // ZeRO-2's reduce-scatters hidden or not, a job on one node of 4 puts no byte on the link.
  ClusterSpec one_node = two_nodes(4, 1e-9);
  one_node.devices_per_node = 4;
  const LayoutPrediction inside = predict_layout(c, layout("dp=4,zero=2,mb=2"), one_node, 1);
  EXPECT_EQ(inside.link_cpu, 0.0);
  one_node.across_nodes.cpu_seconds_per_byte = 0;
  EXPECT_DOUBLE_EQ(predict_layout(c, layout("dp=4,zero=2,mb=2"), one_node, 1).step_seconds, inside.step_seconds);
}
