// Honest MFU: the progress line's MFU is tokens/s (over the recent steps) x FLOPs per token over the
// arithmetic peak (the FMA peak; a bf16 run's own where the CPU has one) of the cores in use, all recorded in
// metrics.jsonl, and stays below 100% when the ranks outnumber the cores (it used to divide by each
// rank's own sgemm reading, taken while the other ranks started, times the ranks: "MFU 97%").
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;

TEST(Mfu, PrintedEqualsRecomputedFromMetricsAndStaysBelowOneWithMoreRanksThanCores) {
  const std::string out = temp_dir("mfu"), peak = out + "/peak.json";
  ::setenv("FIVEFOLD_PEAK_FILE", peak.c_str(), 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const int cores = int(std::thread::hardware_concurrency()), ranks = 2 * cores;
  const std::string cmd = std::string(MPIEXEC) + " --oversubscribe -np " + std::to_string(ranks) + " " + FIVEFOLD_BIN +
                          " train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                          " --out " + out + "/run --steps 4 --eval-every 0 --threads 1 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << text;

  // tiny: C 64, L 2, 4 heads over 2 kv heads (D 16), F 160, V 320 (untied), T 32. Matrix weights:
  // per block q 64x64, k and v 32x64 each, o 64x64, gate/up/down 3x64x160; the LM head 320x64;
  // the embedding lookup is no matrix product. 6 per weight plus attention 12 L C T.
  const double per_block = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 160;
  const double flops_per_token = 6 * (2 * per_block + 320 * 64) + 12.0 * 2 * 64 * 32;

  const nlohmann::json cached = nlohmann::json::parse(read_file(peak));
  const double fma = cached.at("fma_flops_per_core").get<double>();
  std::ifstream metrics(out + "/run/metrics.jsonl");
  std::string line;
  std::vector<nlohmann::json> recs;
  while (std::getline(metrics, line)) recs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(recs.size(), 4u);
  std::regex printed_re(R"(step +(\d+)/4 .* MFU ([0-9.]+)% \(GEMM ceiling)");
  int matched = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), printed_re), end; it != end; ++it) {
    const auto& r = recs.at(size_t(std::stoi((*it)[1]) - 1));
    EXPECT_DOUBLE_EQ(r.at("flops_per_token").get<double>(), flops_per_token);
    // The job's peak: the FMA peak of every core, since 2x cores ranks x 1 thread fill them all.
    EXPECT_DOUBLE_EQ(r.at("peak_flops").get<double>(), fma * cores);
    // The line prints the average over the recent steps; the record keeps the step's own beside it.
    const double recomputed = 100 * r.at("tokens_per_s").get<double>() * flops_per_token / (fma * cores);
    const double recomputed_avg = 100 * r.at("tokens_per_s_avg").get<double>() * flops_per_token / (fma * cores);
    EXPECT_NEAR(std::stod((*it)[2]), recomputed_avg, 0.051) << line;
    EXPECT_LT(recomputed, 100.0);
    EXPECT_LT(recomputed_avg, 100.0);
    EXPECT_NEAR(r.at("mfu").get<double>() * 100, recomputed, 1e-9);
    EXPECT_NEAR(r.at("mfu_avg").get<double>() * 100, recomputed_avg, 1e-9);
    ++matched;
  }
  EXPECT_EQ(matched, 4) << text;
  ::unsetenv("FIVEFOLD_PEAK_FILE");
}

// A bf16 run divides by the bf16 ceiling where the CPU multiplies bf16 (AVX512-BF16: twice the
// fp32 FMA's FLOPs per instruction), else by the FMA peak: a TinyLlama-shaped bf16 run once
// printed "MFU 115%" against the fp32 peak.
TEST(Mfu, Bf16RunDividesByTheBf16CeilingWhereTheCpuHasOne) {
  const std::string out = temp_dir("mfu_bf16"), peak = out + "/peak.json";
  ::setenv("FIVEFOLD_PEAK_FILE", peak.c_str(), 1);
  const CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                                   " --out " + out + "/run --steps 2 --eval-every 0 --threads 1 --precision bf16");
  ::unsetenv("FIVEFOLD_PEAK_FILE");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json cached = nlohmann::json::parse(read_file(peak));
  const double fma = cached.at("fma_flops_per_core").get<double>(), bf16 = cached.at("bf16_flops_per_core").get<double>();
  // The CPU's own flags decide which ceiling applies (cpuinfo, not fivefold's detection).
  const bool has_bf16 = read_file("/proc/cpuinfo").find(" avx512_bf16") != std::string::npos;
  if (has_bf16) EXPECT_GT(bf16, 1.5 * fma) << "vdpbf16ps does 4 FLOPs per fp32 lane to an FMA's 2";
  else EXPECT_EQ(bf16, 0.0);
  std::ifstream metrics(out + "/run/metrics.jsonl");
  std::string line;
  int records = 0;
  for (; std::getline(metrics, line); ++records)
    EXPECT_DOUBLE_EQ(nlohmann::json::parse(line).at("peak_flops").get<double>(), has_bf16 ? bf16 : fma) << line;
  EXPECT_EQ(records, 2);
}

// A peak cache from before it named its bf16 unit (an AMX machine's then held the dot products'
// peak, not the tile unit's) is measured over, not trusted: this machine's own cache, its unit
// taken out and its peaks made up, gives a run that divides by measured ones and a cache rewritten
// naming the unit.
TEST(Mfu, ACacheThatDoesNotNameItsBf16UnitIsMeasuredOver) {
  const std::string out = temp_dir("mfu_old_cache"), peak = out + "/peak.json";
  ::setenv("FIVEFOLD_PEAK_FILE", peak.c_str(), 1);
  auto train = [&](const std::string& run) {
    return run_fivefold("train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " +
                        out + "/" + run + " --steps 1 --eval-every 0 --threads 1 --precision bf16");
  };
  const CliResult first = train("first");  // writes the current cache
  ASSERT_EQ(first.exit_code, 0) << first.output;
  nlohmann::json old = nlohmann::json::parse(read_file(peak));
  ASSERT_TRUE(old.contains("bf16_unit")) << old.dump();
  old.erase("bf16_unit");
  old["fma_flops_per_core"] = old["sgemm_flops_per_core"] = 1.0e6;
  old["bf16_flops_per_core"] = 2.0e6;
  { std::ofstream(peak) << old.dump(2); }
  const CliResult r = train("run");
  ::unsetenv("FIVEFOLD_PEAK_FILE");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json cached = nlohmann::json::parse(read_file(peak));
  ASSERT_TRUE(cached.contains("bf16_unit")) << cached.dump();
  EXPECT_GT(cached.at("fma_flops_per_core").get<double>(), 1.0e8) << "the planted peak was kept";
  std::ifstream metrics(out + "/run/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  EXPECT_GT(nlohmann::json::parse(line).at("peak_flops").get<double>(), 1.0e8) << line;
}
