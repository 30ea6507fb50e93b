// Ranks x threads in the planner (plan/node_split.h, plan/thread_scaling.h): each kind of work
// runs at the threads' worth the measured efficiency gives it (checked against the perfect-scaling
// prediction times the efficiency, computed here); synthetic fits in which the element-wise work
// scales badly flip the pick from one rank of two threads to two ranks of one; the splits
// searched and the oversubscription named; the split travels in the layout string to `train`.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "cli/layout_option.h"
#include "model/model_config.h"
#include "plan/cluster.h"
#include "plan/node_split.h"
#include "plan/step_time.h"
#include "synthetic_cluster.h"
#include "test_data.h"

using namespace ff;
using namespace ff::testkit;

namespace {

// Two cores of synthetic_engine_cluster's rates (bf16 GEMMs no faster), the per-element kernels at 2e-8 s (the
// element-wise work weighs about as much as the GEMMs), memory bandwidth 1e10 bytes/s, and a
// same-node link of 20 us and 2 GB/s.
ClusterSpec two_core_node() {
  ClusterSpec cl = synthetic_engine_cluster(1e10, 2e-8);
  cl.devices_per_node = 1, cl.memory_bytes = 1e12, cl.peak_flops = 1e11, cl.rates.cores = 2;
  cl.rates.gemm_bf16 = cl.rates.gemm_fp32;  // no faster in bf16: the comparison stays between fp32 layouts
  cl.rates.attention_dim.add(1, 1, 1e-10);
  cl.intra_bandwidth = cl.inter_bandwidth = 2e9, cl.intra_latency = cl.inter_latency = 20e-6;
  cl.same_node = cl.across_nodes = LinkClass::uniform(20e-6, 2e9);
  return cl;
}

// Efficiency 1 at one thread, `at_two` at two.
RateCurve efficiency(double at_two) { return RateCurve{{{1, 1.0}, {2, at_two}}}; }

ThreadScaling scaling(double gemm, double attention, double elementwise, double optimizer, int rates_threads) {
  ThreadScaling s;
  s.rates_threads = rates_threads;
  s.gemm = efficiency(gemm), s.attention = efficiency(attention), s.elementwise = efficiency(elementwise);
  s.optimizer = efficiency(optimizer);
  return s;
}

NodeSplit best_split(const ClusterSpec& cl) {
  PlanRequest req;
  req.global_batch = 8;
  SplitRequest s;
  s.cores = 2;
  const PlanResult r = search_splits(synthetic_model(), cl, s, req);
  EXPECT_FALSE(r.ranked.empty());
  if (r.ranked.empty()) return {};
  const LayoutSpec& L = r.ranked.front().layout;
  return {L.ranks(), L.threads};
}

}  // namespace

TEST(ThreadScaling, EachKindRunsAtItsMeasuredEfficiency) {
  const ClusterSpec perfect = cluster_for_split(two_core_node(), 1);
  ClusterSpec measured = perfect;
  measured.rates.thread_scaling = scaling(0.9, 0.8, 0.5, 0.6, 1);
  const LayoutSpec L = parse_layout("mb=4,m=2");
  const LayoutPrediction p = predict_layout(synthetic_model(), L, perfect, 2), q = predict_layout(synthetic_model(), L, measured, 2);
  // Rates measured at one thread: two threads are worth 2 x efficiency of them.
  EXPECT_NEAR(q.gemm, p.gemm / 0.9, 1e-9 * p.gemm);
  EXPECT_NEAR(q.attention, p.attention / 0.8, 1e-9 * p.attention);
  EXPECT_NEAR(q.elementwise, p.elementwise / 0.5, 1e-9 * p.elementwise);
  EXPECT_NEAR(q.optimizer, p.optimizer / 0.6, 1e-9 * p.optimizer);
  // Rates measured at two threads already hold the two-thread efficiency: one thread is worth
  // 1 / efficiency of a two-thread rank's per-core rate.
  measured.rates.thread_scaling.rates_threads = 2;
  const LayoutPrediction p1 = predict_layout(synthetic_model(), L, perfect, 1), q1 = predict_layout(synthetic_model(), L, measured, 1);
  EXPECT_NEAR(q1.gemm, p1.gemm * 0.9, 1e-9 * p1.gemm);
  EXPECT_NEAR(q1.elementwise, p1.elementwise * 0.5, 1e-9 * p1.elementwise);
  // No curves (files written before them): threads scale perfectly, as before.
  EXPECT_EQ(ThreadScaling{}.effective_threads(WorkKind::gemm, 3), 3.0);
}

TEST(ThreadScaling, ElementwiseThatDoesNotScaleFlipsThePick) {
  ClusterSpec cl = two_core_node();
  // Every kind scales perfectly: one rank of two threads does the same work without the gradient
  // all-reduce two ranks need.
  cl.rates.thread_scaling = scaling(1.0, 1.0, 1.0, 1.0, 1);
  NodeSplit s = best_split(cl);
  EXPECT_EQ(s.ranks_per_node, 1);
  EXPECT_EQ(s.threads, 2);
  // GEMMs still scale, but the element-wise kernels and the optimizer gain almost nothing from a
  // second thread: two one-thread ranks win despite the all-reduce.
  cl.rates.thread_scaling = scaling(1.0, 1.0, 0.55, 0.55, 1);
  s = best_split(cl);
  EXPECT_EQ(s.ranks_per_node, 2);
  EXPECT_EQ(s.threads, 1);
}

TEST(NodeSplit, SearchesTheSplitsThatFitTheCoresAndKeepsFixedOnes) {
  auto pairs = [](const std::vector<NodeSplit>& v) {
    std::vector<std::pair<int, int>> out;
    for (const NodeSplit& s : v) out.emplace_back(s.ranks_per_node, s.threads);
    return out;
  };
  using P = std::vector<std::pair<int, int>>;
  // Every split that fills 4 cores or fewer; on a shared machine also those that fill them twice.
  EXPECT_EQ(pairs(node_splits({.cores = 4})), (P{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {4, 1}}));
  EXPECT_EQ(pairs(node_splits({.cores = 4, .oversubscribe = true})),
            (P{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {4, 1}, {1, 8}, {2, 4}, {4, 2}, {8, 1}}));
  EXPECT_EQ(pairs(node_splits({.cores = 6, .ranks_per_node = 2})), (P{{2, 1}, {2, 3}}));
  EXPECT_EQ(pairs(node_splits({.cores = 4, .threads = 2})), (P{{1, 2}, {2, 2}, {4, 2}}));
  EXPECT_EQ(pairs(node_splits({.cores = 2, .ranks_per_node = 2, .threads = 2})), (P{{2, 2}}));
  EXPECT_EQ(oversubscription({2, 1}, 2), "");
  const std::string w = oversubscription({2, 2}, 2);
  EXPECT_NE(w.find("oversubscribed"), std::string::npos) << w;
  EXPECT_NE(w.find("4 threads on 2 cores"), std::string::npos) << w;
}

// Where other work shares the machine, more threads than cores win a larger share of them; the
// curves measured with the cores filled twice over say what the threads' switches and waits cost
// in return, and a cost larger than the share won keeps the pick within the cores.
TEST(ThreadScaling, TheTwiceOverCurvesCostAnOversubscribedSplit) {
  ClusterSpec cl = two_core_node();
  cl.rates.thread_scaling = scaling(1.0, 1.0, 1.0, 1.0, 1);
  // 2 busy threads got 1.9 of the 2 cores: 2 x 2 / 1.9 - 2 = 0.105 other runnable threads, so 4
  // threads get 2 x 4 / 4.105 = 1.949 cores where 2 get 1.9 (2.6% more).
  cl.rates.available_cores = 1.9, cl.rates.busy_threads = 2;
  const NodeSplit time_shared = best_split(cl);
  EXPECT_EQ(time_shared.ranks_per_node * time_shared.threads, 4);
  const LayoutSpec L = parse_layout("mb=4,m=2");
  const ClusterSpec one_rank = cluster_for_split(cl, 1);
  const LayoutPrediction p = predict_layout(synthetic_model(), L, one_rank, 4);
  // Every kind keeps 90% of its time-shared cores at 4 threads on 2: each term 1 / 0.9 as long.
  for (WorkKind kind : {WorkKind::gemm, WorkKind::attention, WorkKind::elementwise, WorkKind::optimizer})
    cl.rates.thread_scaling.curve(kind, true) = RateCurve{{{1, 0.9}, {2, 0.9}, {4, 0.9}}};
  EXPECT_DOUBLE_EQ(cl.rates.thread_scaling.effective_threads(WorkKind::gemm, 4, true), 4 * 0.9);
  EXPECT_DOUBLE_EQ(cl.rates.thread_scaling.effective_threads(WorkKind::gemm, 4, false), 4.0);
  const LayoutPrediction q = predict_layout(synthetic_model(), L, cluster_for_split(cl, 1), 4);
  EXPECT_NEAR(q.gemm, p.gemm / 0.9, 1e-9 * p.gemm);
  EXPECT_NEAR(q.elementwise, p.elementwise / 0.9, 1e-9 * p.elementwise);
  // Within the cores, the twice-over curves play no part.
  EXPECT_DOUBLE_EQ(predict_layout(synthetic_model(), L, cluster_for_split(cl, 1), 2).gemm,
                   predict_layout(synthetic_model(), L, one_rank, 2).gemm);
  const NodeSplit costed = best_split(cl);
  EXPECT_EQ(costed.ranks_per_node * costed.threads, 2);
}

TEST(NodeSplit, RanksShareTheNodesMemoryAndPeak) {
  ClusterSpec cl = two_core_node();
  cl.devices_per_node = 2, cl.memory_bytes = 3e9, cl.peak_flops = 5e10;  // as calibrated with 2 ranks
  const ClusterSpec one = cluster_for_split(cl, 1), four = cluster_for_split(cl, 4);
  EXPECT_EQ(one.devices_per_node, 1);
  EXPECT_DOUBLE_EQ(one.memory_bytes, 6e9);
  EXPECT_DOUBLE_EQ(one.peak_flops, 1e11);
  EXPECT_DOUBLE_EQ(four.memory_bytes, 1.5e9);
  EXPECT_DOUBLE_EQ(four.peak_flops, 2.5e10);
}

TEST(ThreadScaling, RoundTripsThroughTheClusterFileAndRefusesHalfOfIt) {
  ClusterSpec cl = two_core_node();
  cl.rates.thread_scaling = scaling(0.95, 0.75, 0.5, 0.625, 1);
  const std::string dir = temp_dir("thread_scaling"), path = dir + "/c.toml";
  auto write = [&](const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write(cluster_to_toml(cl));
  ThreadScaling back = load_cluster(path).rates.thread_scaling;
  EXPECT_EQ(back.rates_threads, 1);
  EXPECT_DOUBLE_EQ(back.elementwise.at(2), 0.5);
  EXPECT_DOUBLE_EQ(back.optimizer.at(2), 0.625);
  EXPECT_FALSE(back.twice_known());  // not written where not measured
  cl.rates.thread_scaling.gemm_twice = cl.rates.thread_scaling.attention_twice = RateCurve{{{1, 0.95}, {2, 0.9}, {4, 0.75}}};
  cl.rates.thread_scaling.elementwise_twice = cl.rates.thread_scaling.optimizer_twice = RateCurve{{{1, 0.875}, {2, 0.8}, {4, 0.5}}};
  write(cluster_to_toml(cl));
  back = load_cluster(path).rates.thread_scaling;
  EXPECT_DOUBLE_EQ(back.gemm_twice.at(4), 0.75);
  EXPECT_DOUBLE_EQ(back.optimizer_twice.at(1), 0.875);
  // The file without the first line that starts with `key` is refused, the error naming it.
  auto refused_without = [&](const std::string& key, const char* what) {
    std::string text = cluster_to_toml(cl);
    const size_t at = text.find(key);
    text.erase(at, text.find('\n', at) - at);
    write(text);
    try {
      load_cluster(path);
      ADD_FAILURE() << what << " was read";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused_without("thread_optimizer_twice", "a file with three of the four twice-over curves");
  refused_without("thread_optimizer", "a file with three of the four curves");
}

TEST(NodeSplit, TheLayoutStringCarriesTheThreadsToTrain) {
  LayoutSpec L = parse_layout("dp=2,mb=4,threads=3");
  EXPECT_EQ(L.threads, 3);
  EXPECT_NE(L.str().find(",threads=3"), std::string::npos) << L.str();
  EXPECT_EQ(parse_layout(L.str()).threads, 3);
  EXPECT_EQ(parse_layout("dp=2").str().find("threads"), std::string::npos);  // not part of the layout: not printed
  TrainConfig cfg;
  cfg.threads = 0;
  cli::apply_layout_option(cfg, L.str(), {});
  EXPECT_EQ(cfg.threads, 3);
  EXPECT_NO_THROW(cli::apply_layout_option(cfg, "dp=2,mb=4", {{"threads", "2"}}));  // a layout without threads
  try {
    cli::apply_layout_option(cfg, L.str(), {{"threads", "2"}});
    ADD_FAILURE() << "--threads and --layout threads= were both taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--threads 2 and --layout's threads=3 both set the threads per rank"), std::string::npos) << e.what();
  }
}

TEST(NodeSplit, PlanWarnsOfOversubscriptionAndRefusesImpossibleSplits) {
  const std::string model = config_path("tiny.toml") + " --vocab-size 320";
  CliResult r = run_fivefold("plan --config " + model + " --cores 2 --ranks-per-node 2 --threads 2 --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: 2 ranks per node x 2 threads = 4 threads on 2 cores: oversubscribed"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("threads=2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run #1: mpirun -np 2 --bind-to none fivefold train"), std::string::npos) << r.output;
  r = run_fivefold("plan --config " + model + " --cores 2 --threads 9");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--threads 9 is more than 4 x the 2 cores per node"), std::string::npos) << r.output;
  r = run_fivefold("plan --config " + model + " --ranks 3 --ranks-per-node 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--ranks 3 is not --ranks-per-node 2 x --nodes 1"), std::string::npos) << r.output;
  // Searched on two cores of this machine (nothing measured: a quiet machine): the splits that
  // fill them or fewer, each layout printed with its threads; no warning (nothing was fixed).
  r = run_fivefold("plan --config " + model + " --cores 2 --top 100000 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  std::set<std::pair<int, int>> seen;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    seen.emplace(j.at("ranks").get<int>(), j.at("threads").get<int>());
  }
  EXPECT_EQ(seen, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}}));
}

TEST(NodeSplit, OtherWorkSharesTheCoresThreadByThread) {
  EngineRates r;
  r.cores = 2;
  EXPECT_EQ(r.usable_cores(4), 2.0);  // nothing measured: the cores
  r.available_cores = 0.5;
  EXPECT_EQ(r.usable_cores(4), 0.5);  // measured without the job's threads (older files): as measured
  // 2 busy threads got 0.5 of 2 cores: 2 x 2 / 0.5 - 2 = 6 other runnable threads. Then n threads
  // get 2 n / (n + 6) cores.
  r.busy_threads = 2;
  EXPECT_NEAR(r.usable_cores(2), 0.5, 1e-12);
  EXPECT_NEAR(r.usable_cores(1), 2.0 / 7, 1e-12);
  EXPECT_NEAR(r.usable_cores(4), 0.8, 1e-12);
  // A quiet machine: every thread up to the cores gets one.
  r.available_cores = 2;
  EXPECT_EQ(r.usable_cores(1), 1.0);
  EXPECT_EQ(r.usable_cores(4), 2.0);
}

TEST(NodeSplit, OnASharedMachineTheSearchTriesMoreThreadsThanCores) {
  ClusterSpec cl = two_core_node();
  cl.rates.thread_scaling = scaling(1.0, 1.0, 1.0, 1.0, 1);
  PlanRequest req;
  req.global_batch = 8;
  auto most_threads = [&] {
    int most = 0;
    for (const LayoutPrediction& p : search_splits(synthetic_model(), cl, {.cores = 2}, req).ranked)
      most = std::max(most, p.layout.ranks() * p.layout.threads);
    return most;
  };
  EXPECT_EQ(most_threads(), 2);  // nothing else measured on the machine
  cl.rates.available_cores = 0.5, cl.rates.busy_threads = 2;  // 6 other runnable threads
  EXPECT_EQ(most_threads(), 4);
}
