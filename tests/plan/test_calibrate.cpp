// `fivefold calibrate` under mpirun writes a cluster.toml with every measured class and link fit,
// and `fivefold plan` plans with it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "calibrate/calibration.h"
#include "calibrate/link_cpu.h"
#include "calibrate/shared_cores.h"
#include "calibrate/thread_scaling_run.h"
#include "calibrate/this_machine.h"
#include "cli_runner.h"
#include "plan/cluster.h"
#include "test_data.h"

using namespace ff::testkit;

// calibrate keeps, for every rate, the median over its sweeps: one sweep's slow moment (the
// 2x outlier a VM's neighbour causes) must not reach the cluster file.
TEST(Calibrate, EachRateIsTheMedianOverItsSweeps) {
  const std::vector<std::vector<double>> sweeps = {{1.0, 10.0, 5.0}, {2.0, 1000.0, 5.0}, {3.0, 11.0, 4.0}};
  EXPECT_EQ(ff::median_by_position(sweeps), (std::vector<double>{2.0, 11.0, 5.0}));
  EXPECT_EQ(ff::median_by_position({{1.0, 8.0}, {3.0, 2.0}}), (std::vector<double>{2.0, 5.0}));  // even: the mean of two
  EXPECT_EQ(ff::median_by_position({{7.0}}), (std::vector<double>{7.0}));
  EXPECT_THROW(ff::median_by_position({{1.0, 2.0}, {1.0}}), std::out_of_range);  // sweeps of unequal length
}

// Namespaced nodes on one host share its cores: the per-core rates are measured by as many of
// the host's ranks as fill its cores, wherever the launcher's nodes are; separate hosts all measure.
// A timing of groups running at once ends when the last group's work does: each call here sleeps
// 3 ms, so 2 groups of 4 calls each cannot take less than 12 ms (a timing thread that read the
// clock around a barrier once measured 0.01 ms: it got a core back only after the work).
TEST(Calibrate, AThreadGroupTimingEndsAfterEveryGroupsWork) {
  const ff::MakeWork sleeper = [] { return ff::Work([] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); }); };
  for (int timing = 0; timing < 10; ++timing) {
    const double seconds = ff::concurrent_seconds(2, 1, sleeper, 4);
    EXPECT_GE(seconds, 0.012);
    EXPECT_LT(seconds, 0.5);
  }
}

TEST(Calibrate, RatesAreMeasuredByTheRanksThatFillEachMachinesCores) {
  using V = std::vector<bool>;
  const int64_t host = 7, other = 9;
  // Two "nodes" x 2 ranks on one 2-core host: its first two ranks measure, the others wait.
  EXPECT_EQ(ff::rate_measuring_ranks({host, host, host, host}, 2, 1), (V{true, true, false, false}));
  // The same ranks on two 2-core hosts: each host's ranks fit its cores, so all measure at once.
  EXPECT_EQ(ff::rate_measuring_ranks({host, host, other, other}, 2, 1), (V{true, true, true, true}));
  // Ranks placed round-robin on two hosts of 1 core: the first rank of each host.
  EXPECT_EQ(ff::rate_measuring_ranks({host, other, host, other}, 1, 1), (V{true, true, false, false}));
  // Two threads per rank on a 2-core host: one rank fills it; more threads than cores still lets one.
  EXPECT_EQ(ff::rate_measuring_ranks({host, host}, 2, 2), (V{true, false}));
  EXPECT_EQ(ff::rate_measuring_ranks({host, host}, 2, 4), (V{true, false}));
  // The kernel's boot id names this machine: the same key for every call, never a fallback's.
  EXPECT_EQ(ff::machine_key(0), ff::machine_key(3));
  EXPECT_GE(ff::machine_key(0), 0);
}

// The kernel's CPU across nodes is machine-wide: /proc/stat's system + irq + softirq (user and
// nice apart), over the bytes all ranks of the machine send and receive across.
TEST(Calibrate, TheLinksKernelCpuIsCountedPerMachine) {
  // user 100, nice 20, system 30, idle 4000, iowait 5, irq 6, softirq 7 ticks at 100 per second.
  const ff::MachineCpu cpu = ff::parse_proc_stat_cpu("cpu  100 20 30 4000 5 6 7 0 0 0", 100);
  EXPECT_DOUBLE_EQ(cpu.user, 1.2);
  EXPECT_DOUBLE_EQ(cpu.kernel, 0.43);
  EXPECT_THROW(ff::parse_proc_stat_cpu("cpu0 1 2 3 4 5 6 7", 100), std::runtime_error);  // a single CPU's line
  EXPECT_THROW(ff::parse_proc_stat_cpu("cpu 1 2 3", 100), std::runtime_error);
  const ff::MachineCpu now = ff::machine_cpu();
  EXPECT_GT(now.user + now.kernel, 0);
  // What each of 4 ranks sent across, received as much: on one machine (two namespaced nodes) its
  // kernel carries all of it twice; on two machines each its own ranks' twice.
  const std::vector<double> sent = {10, 20, 30, 40};
  EXPECT_EQ(ff::bytes_through_machine(sent, {7, 7, 7, 7}), (std::vector<double>(4, 200)));
  EXPECT_EQ(ff::bytes_through_machine(sent, {7, 7, 9, 9}), (std::vector<double>{60, 60, 140, 140}));
  EXPECT_EQ(ff::bytes_through_machine(sent, {7, 9, 7, 9}), (std::vector<double>{80, 120, 80, 120}));
}

TEST(Calibrate, WritesEveryMeasurementAndPlanReadsIt) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::string dir = temp_dir("calibrate"), file = dir + "/cluster.toml";
  const std::string cmd = std::string(MPIEXEC) + " --oversubscribe -np 2 " + FIVEFOLD_BIN + " calibrate --out " + file +
                          " --threads 1 --sweeps 1 > " + dir + "/log 2>&1";  // one sweep: CI's time
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir + "/log");
  const std::string t = read_file(file);
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"})
    for (const char* what : {"_alpha", "_beta", "_busbw"}) {
      const std::regex re(std::string(op) + what + R"( = ([0-9.e+-]+))");
      std::smatch m;
      ASSERT_TRUE(std::regex_search(t, m, re)) << op << what << " missing in\n" << t;
      EXPECT_GE(std::stod(m[1]), 0.0) << op << what;
      if (std::string(what) == "_busbw") {
        EXPECT_GT(std::stod(m[1]), 1e6) << op;  // > 1 MB/s: a real number
      }
    }
  for (const char* key : {"gemm_1024x1024x1024", "gemm_256x1024x1024", "gemm_1024x4096x512", "memory_bandwidth"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(t, m, std::regex(std::string(key) + R"( = ([0-9.e+-]+))"))) << key;
    EXPECT_GT(std::stod(m[1]), 1e8) << key;
  }
  // The step-time model's rates: GEMMs at 3 row counts x 5 widths per precision, attention at four
  // lengths, bandwidth at four working sets, the cores the ranks got, per-op link fits.
  for (const char* curve : {"gemm_fp32", "gemm_bf16", "attention", "bandwidth"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(t, m, std::regex(std::string("\\n") + curve + R"( = \[(.*)\]\n)"))) << curve;
    const std::string points = m[1];
    EXPECT_EQ(std::count(points.begin(), points.end(), '['), std::string(curve).rfind("gemm", 0) == 0 ? 15 : 4) << points;
  }
  // The engine's own kernels (all ranks at once, operands flushed from the caches): three sizes each,
  // attention at four lengths x three head widths, cp's full blocks at four chunk lengths x three
  // (plan, below, rejects a rate that is not positive).
  for (const char* curve : {"optimizer", "rmsnorm", "rope", "swiglu", "cross_entropy", "weight_copy", "attention_dim",
                            "cp_block_dim", "cp_block_dim_bf16", "cp_diag_dim", "cp_diag_dim_bf16"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(t, m, std::regex(std::string("\\n") + curve + R"( = \[(.*)\]\n)"))) << curve;
    const std::string points = m[1];
    EXPECT_EQ(std::count(points.begin(), points.end(), '['), std::string(curve).find("_dim") != std::string::npos ? 12 : 3) << points;
  }
  // One rank's threads against one-thread ranks, every core busy: efficiency 1 at one thread by
  // definition, then a positive figure at each power of two up to the cores.
  const ff::ClusterSpec read_back = ff::load_cluster(file);
  EXPECT_EQ(read_back.rates.thread_scaling.rates_threads, 1) << t;
  for (ff::WorkKind kind : {ff::WorkKind::gemm, ff::WorkKind::attention, ff::WorkKind::elementwise, ff::WorkKind::optimizer}) {
    const ff::RateCurve& c = read_back.rates.thread_scaling.curve(kind);
    ASSERT_FALSE(c.empty()) << t;
    EXPECT_EQ(c.points.front(), (std::pair<double, double>{1.0, 1.0})) << t;
    EXPECT_EQ(c.points.back().first, double(read_back.rates.cores)) << t;
    for (const auto& p : c.points) EXPECT_GT(p.second, 0.05) << t;
    // The same with the cores filled twice over: up to twice the cores' threads in one group.
    const ff::RateCurve& twice = read_back.rates.thread_scaling.curve(kind, true);
    ASSERT_FALSE(twice.empty()) << t;
    EXPECT_EQ(twice.points.front().first, 1.0) << t;
    EXPECT_EQ(twice.points.back().first, 2.0 * read_back.rates.cores) << t;
    for (const auto& p : twice.points) EXPECT_GT(p.second, 0.05) << t;
  }
  std::smatch cores;
  ASSERT_TRUE(std::regex_search(t, cores, std::regex(R"(available_cores = ([0-9.e+-]+))")));
  EXPECT_GT(std::stod(cores[1]), 0.05);
  EXPECT_LE(std::stod(cores[1]), double(std::thread::hardware_concurrency()) + 1e-9);
  for (const char* cls : {"[same_node]", "[across_nodes]"}) EXPECT_NE(t.find(cls), std::string::npos) << cls;
  // Who multiplies 16-bit inputs on these CPUs, for a planner running elsewhere (test_engine_host).
  const ff::ClusterSpec written = ff::load_cluster(file);
  EXPECT_EQ(written.bf16_gemm, ff::this_machine(2).bf16_gemm) << t;
  EXPECT_EQ(written.fp16_gemm, ff::this_machine(2).fp16_gemm) << t;
  const std::string model = dir + "/model.toml";
  std::FILE* f = std::fopen(model.c_str(), "w");
  std::fputs("vocab_size = 320\ndim = 64\nn_layers = 2\nn_heads = 4\nn_kv_heads = 2\nffn_dim = 160\nseq_len = 32\n", f);
  std::fclose(f);
  const CliResult plan = run_fivefold("plan --config " + model + " --ranks 2 --global-batch 8 --cluster " + file);
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("calibrated: this machine"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find(" 1  dp="), std::string::npos) << plan.output;
}
