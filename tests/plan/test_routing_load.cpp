// The router's spread over expert-parallel ranks (plan/routing_load.h) and what the step-time model
// charges for it, each checked against numbers worked out here by hand:
//  - the busiest ep rank's rows over the mean rank's, averaged over blocks and steps, from routed
//    counts per expert, with the experts grouped as ep places them;
//  - the [routing] table's round trip and its errors; a serial run's folder read into it, and a
//    parallel run's refused;
//  - an ep layout's expert GEMMs, SwiGLU and exchange bytes at the busiest rank's rows, and no
//    change for a model the statistic was not measured on;
//  - ranks sharing cores: the bound of all ranks' work over the cores at the mean rank's rows, plus
//    the polling of a rank waiting for the busiest, up to the comm engine's spin window per wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "calibrate/routing_run.h"
#include "model/model_config.h"
#include "plan/cluster.h"
#include "plan/search.h"
#include "plan/step_time.h"

using namespace ff;

namespace {
namespace routing_load_test {

ModelConfig moe_model() {
  ModelConfig c;
  c.vocab_size = 256, c.dim = 64, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160;
  c.seq_len = 32, c.tied_embeddings = false;
  c.moe.n_experts = 4, c.moe.top_k = 2, c.moe.expert_ffn_dim = 48;
  c.validate();
  return c;
}

// GEMMs at 1e10 FLOP/s, every kernel at 1e-9 s per element, attention free, streams and links free
// except the all-to-all at 1e9 bytes/s; `cores` cores for the ranks.
ClusterSpec cluster(int cores = 64) {
  ClusterSpec cl;
  cl.name = "synthetic", cl.engine = true, cl.devices_per_node = 64, cl.memory_bytes = 1e15, cl.peak_flops = 1e12;
  cl.rates.cores = cores;
  cl.rates.gemm_fp32.add(1, 1, 1e10);
  cl.rates.gemm_bf16.add(1, 1, 1e10);
  cl.rates.attention.points = {{1, 1e-30}};
  cl.rates.bandwidth.points = {{1, 1e30}};
  for (RateCurve* k : {&cl.rates.optimizer, &cl.rates.rmsnorm, &cl.rates.rope, &cl.rates.swiglu,
                       &cl.rates.cross_entropy, &cl.rates.weight_copy})
    k->points = {{1, 1e-9}};
  for (GemmTable* t : {&cl.rates.attention_dim, &cl.rates.attention_fwd_dim}) t->add(1, 1, 1e-30);
  cl.same_node = cl.across_nodes = LinkClass::uniform(1e-30, 1e30);
  cl.same_node.bandwidth[int(Coll::all_to_all)] = 1e9;
  cl.across_nodes = cl.same_node;
  return cl;
}

ClusterSpec with_load(ClusterSpec cl, double f2, int experts = 4) {
  cl.routing.experts = experts, cl.routing.top_k = 2, cl.routing.steps = 1;
  cl.routing.busiest_over_mean = {{2, f2}};
  return cl;
}

LayoutPrediction predict(const ModelConfig& c, const char* text, const ClusterSpec& cl) {
  return predict_layout(c, parse_layout(text), cl, 1);
}

}  // namespace routing_load_test
}  // namespace

using namespace routing_load_test;

TEST(RoutingLoad, BusiestRankOverMeanFromCountsGroupedAsEpPlacesExperts) {
  // Block 1: ranks of ep 2 hold experts {0, 1} and {2, 3}: 400 and 600 rows, mean 500 -> 1.2; ep 4:
  // 400 over 250 -> 1.6. Block 2 is even: 1 and 1. The statistic is their mean.
  const RoutingLoad r = routing_load({{100, 300, 200, 400}, {250, 250, 250, 250}}, 4, 2, 1);
  ASSERT_EQ(r.busiest_over_mean.size(), 2u);
  EXPECT_EQ(r.busiest_over_mean[0].first, 2);
  EXPECT_NEAR(r.busiest_over_mean[0].second, (1.2 + 1.0) / 2, 1e-12);
  EXPECT_EQ(r.busiest_over_mean[1].first, 4);
  EXPECT_NEAR(r.busiest_over_mean[1].second, (1.6 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(r.factor(2, 4, 2), 1.1, 1e-12);
  EXPECT_EQ(r.factor(1, 4, 2), 1.0);  // no ep: nobody waits for another rank's experts
  EXPECT_EQ(r.factor(2, 8, 2), 1.0);  // another model: not measured
  EXPECT_EQ(r.factor(2, 4, 1), 1.0);
}

TEST(RoutingLoad, TableRoundTripsAndBadTablesNameTheProblem) {
  RoutingLoad r = routing_load({{100, 300, 200, 400}}, 4, 2, 7);
  r.source = "runs/moe";
  const toml::table t = toml::parse(routing_to_toml(r));
  const RoutingLoad back = read_routing(t["routing"].as_table(), "c.toml");
  EXPECT_EQ(back.experts, 4);
  EXPECT_EQ(back.top_k, 2);
  EXPECT_EQ(back.steps, 7);
  EXPECT_EQ(back.source, "runs/moe");
  ASSERT_EQ(back.busiest_over_mean.size(), 2u);
  EXPECT_NEAR(back.factor(2, 4, 2), 1.2, 1e-4);
  EXPECT_NEAR(back.factor(4, 4, 2), 1.6, 1e-4);
  // The plan's explanation of ep layouts says what was measured, and where from.
  EXPECT_NE(back.explain().find("1.20x the mean rank's routes on ep 2"), std::string::npos) << back.explain();
  EXPECT_NE(back.explain().find("runs/moe"), std::string::npos) << back.explain();
  EXPECT_NE(RoutingLoad{}.explain().find("evenly"), std::string::npos);
  const toml::table bad = toml::parse("[routing]\nexperts = 4\ntop_k = 2\nbusiest_over_mean = [[3, 1.2]]\n");
  try {
    read_routing(bad["routing"].as_table(), "c.toml");
    FAIL() << "ep 3 does not divide 4 experts";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("divisor of experts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("c.toml"), std::string::npos) << e.what();
  }
  const toml::table unknown = toml::parse("[routing]\nexperts = 4\ntop_k = 2\nimbalance = 2\n");
  EXPECT_THROW(read_routing(unknown["routing"].as_table(), "c.toml"), std::runtime_error);
}

TEST(RoutingLoad, ASerialRunsFolderIsReadAndAParallelOneRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ff_routing_run_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const char* config) {
    std::ofstream(dir / "config.toml") << config;
    std::ofstream m(dir / "metrics.jsonl");
    m << R"({"step": 1, "step_seconds": 0.1, "moe": {"layers": [{"tokens_per_expert": [100, 300, 200, 400]},)"
      << R"( {"tokens_per_expert": [250, 250, 250, 250]}]}})" << "\n";
    m << R"({"step": 2, "step_seconds": 0.1, "moe": {"layers": [{"tokens_per_expert": [300, 300, 300, 100]},)"
      << R"( {"tokens_per_expert": [250, 250, 250, 250]}]}})" << "\n";
    m << R"({"event": "eval", "val_loss": 3.0})" << "\n";
  };
  write("data = \"d\"\nn_experts = 4\ntop_k = 2\ndp = 1\nep = 1\n");
  const RoutingLoad r = read_routing_run(dir.string());
  EXPECT_EQ(r.steps, 2);
  // ep 2: blocks 1.2, 1, then 600 / 500 = 1.2 and 1: mean 1.1.
  EXPECT_NEAR(r.factor(2, 4, 2), 1.1, 1e-12);
  write("data = \"d\"\nn_experts = 4\ntop_k = 2\ndp = 2\nep = 2\n");
  try {
    read_routing_run(dir.string());
    FAIL() << "an ep run must not calibrate the ep layouts it is validated against";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("serial"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RoutingLoad, EpLayoutsPayTheBusiestRanksRows) {
  const ModelConfig c = moe_model();
  const double N = 4 * 32, C = 64, K = 2, Fe = 48, L = 4, f = 1.5;  // mb 4; per block
  const LayoutPrediction even = predict(c, "dp=2,ep=2,mb=4", cluster()), busy = predict(c, "dp=2,ep=2,mb=4", with_load(cluster(), f));
  // The busiest rank's two experts take f N K rows instead of N K: gate_up (2 Fe x C) and down
  // (C x Fe), forward + dgrad + wgrad, 2 FLOPs per multiply-add, at 1e10 FLOP/s.
  EXPECT_NEAR(busy.gemm - even.gemm, L * 3 * 2 * (f - 1) * N * K * 3 * Fe * C / 1e10, 1e-12);
  // SwiGLU over its f N K rows of Fe outputs (forward + backward at 1e-9 s per output).
  EXPECT_NEAR(busy.elementwise - even.elementwise, L * (f - 1) * N * K * Fe * 1e-9, 1e-12);
  // Dispatch and combine both ways wait for its f N K rows of C floats; over 2 ranks an
  // all-to-all moves half of a rank's buffer over the link.
  EXPECT_NEAR(busy.tp_comm - even.tp_comm, L * 4 * 0.5 * (f - 1) * N * K * C * 4 / 1e9, 1e-12);
  // Statistics of another model change nothing.
  EXPECT_EQ(predict(c, "dp=2,ep=2,mb=4", with_load(cluster(), f, 8)).step_seconds, even.step_seconds);
}

TEST(RoutingLoad, SharedCoresPayTheMeanRanksWorkAndItsPollingForTheBusiest) {
  const ModelConfig c = moe_model();
  const double N = 4 * 32, C = 64, K = 2, Fe = 48, L = 4, share = 2;  // two ranks on one core
  auto critical = [](const LayoutPrediction& p) { return p.compute + p.bubble + p.tp_comm + p.dp_comm; };
  const LayoutPrediction even = predict(c, "dp=2,ep=2,mb=4", cluster(1));
  ASSERT_GT(even.step_seconds, critical(even) * 1.2);  // the shared core binds, not one rank's path
  // The mean rank's expert work per block, forward: its N K routed rows through gate_up and down
  // (2 FLOPs per multiply-add at 1e10) and SwiGLU's forward (a third of 1e-9 s per output); the
  // backward twice that.
  const double experts = 2 * N * K * 3 * Fe * C / 1e10 + N * K * Fe * 1e-9 / 3;
  for (double f : {1.5, 9.0}) {
    const LayoutPrediction busy = predict(c, "dp=2,ep=2,mb=4", with_load(cluster(1), f));
    const LayoutPrediction alone = predict(c, "dp=2,ep=2,mb=4", with_load(cluster(), f));
    // Both ranks' work over the core is the batch's routes however they are spread, plus what the
    // mean rank polls while the busiest finishes (f - 1) times its expert work at half a core:
    // each wait, forward and backward, up to the comm engine's 2 ms spin window.
    double spin = 0;
    for (double pass : {1.0, 2.0}) spin += std::min(2e-3, (f - 1) * pass * experts * share);
    const double exchange = alone.tp_comm - predict(c, "dp=2,ep=2,mb=4", cluster()).tp_comm;
    EXPECT_NEAR(busy.step_seconds, std::max(critical(busy), even.step_seconds + exchange + share * L * spin), 1e-12)
        << "f = " << f;
  }
  // f = 9 waits past the window both ways: each block's polling is capped at 2 x 2 ms.
  ASSERT_GT(8 * experts * share, 2e-3);
}
