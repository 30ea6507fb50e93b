// What `fivefold plan` prints is usable as printed: --json is JSON and nothing else on stdout, the
// step time is the sum of the parts it shows, a pipeline layout's communication is the pipeline's,
// --layout takes the config's batch, every printed layout trains under `train --layout` exactly as
// the same layout given key by key, and an MoE model's FLOPs per token count only the experts a
// token runs through.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "model/model_config.h"
#include "test_data.h"

using namespace ff::testkit;

namespace {
// stdout alone (stderr passes through), and the exit status.
std::pair<int, std::string> stdout_of(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string plan_cmd(const std::string& args) {
  return std::string(FIVEFOLD_BIN) + " plan --config " + config_path("tiny.toml") + " --vocab-size 320 " + args;
}

// Every line of stdout parsed as one JSON document; a line that is not JSON fails the test.
std::vector<nlohmann::json> json_lines(const std::string& args) {
  const auto [rc, out] = stdout_of(plan_cmd(args + " --json"));
  EXPECT_EQ(rc, 0) << out;
  std::vector<nlohmann::json> docs;
  std::stringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      docs.push_back(nlohmann::json::parse(line));
    } catch (const std::exception&) {
      ADD_FAILURE() << "not JSON on plan --json's stdout: " << line;
    }
  }
  return docs;
}

double parts(const nlohmann::json& j) {
  double sum = 0;
  for (const char* k : {"compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "core_sharing"}) {
    EXPECT_TRUE(j.contains(k)) << k << " missing from " << j.dump();
    if (j.contains(k)) sum += j.at(k).get<double>();
  }
  return sum;
}

std::vector<nlohmann::json> metrics_of(const std::string& run) {
  std::ifstream f(run + "/metrics.jsonl");
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(f, line))
    if (auto j = nlohmann::json::parse(line); j.contains("loss")) rows.push_back(j);
  return rows;
}

int train(const std::string& out, const std::string& flags) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::string cmd = std::string(MPIEXEC) + " --oversubscribe -np 2 " + FIVEFOLD_BIN + " train --config " +
                          config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out +
                          " --steps 2 --eval-every 0 --threads 1 " + flags + " > " + out + ".log 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST(PlanOutput, JsonIsAllOfStdoutAndTheStepIsTheSumOfItsColumns) {
  // 2 ranks fit this machine's 2 cores; 8 outnumber them, so the ranks wait for cores too.
  for (const char* ranks : {"--ranks 2", "--ranks 8"}) {
    const std::vector<nlohmann::json> docs = json_lines(std::string(ranks) + " --top 4 --threads 1");
    ASSERT_EQ(docs.size(), 4u) << ranks;
    for (const nlohmann::json& j : docs) {
      const double step = j.at("step_seconds").get<double>();
      EXPECT_NEAR(parts(j), step, 1e-12 * step) << ranks << " " << j.dump();
    }
  }
  const std::vector<nlohmann::json> one = json_lines("--ranks 2 --layout pp=2");
  ASSERT_EQ(one.size(), 2u);  // the layout, then its ledger total per pipeline rank
  EXPECT_TRUE(one[1].contains("ledger_total_by_pp_rank"));
}

TEST(PlanOutput, PipelineLayoutShowsPipelineCommunicationAndTensorOnlyWithTp) {
  const nlohmann::json pp = json_lines("--ranks 2 --layout pp=2").at(0);
  EXPECT_GT(pp.at("pp_comm").get<double>(), 0) << pp.dump();
  EXPECT_EQ(pp.at("tp_comm").get<double>(), 0) << pp.dump();
  const nlohmann::json tp = json_lines("--ranks 2 --layout tp=2").at(0);
  EXPECT_GT(tp.at("tp_comm").get<double>(), 0) << tp.dump();
  EXPECT_EQ(tp.at("pp_comm").get<double>(), 0) << tp.dump();
}

TEST(PlanOutput, LayoutTakesTheConfigsMicroBatchAndGlobalBatch) {
  // tiny.toml: micro_batch 4, grad_accum 1; on 2 ranks its data-parallel layout steps on 4 x 1 x 2
  // = 8 sequences. pp=2 leaves one replica: 8 / 4 = 2 micro-batches of 4.
  EXPECT_EQ(json_lines("--ranks 2 --layout pp=2").at(0).at("layout"), "dp=1,tp=1,pp=2,1f1b,mb=4,m=2,zero=0,recompute=none");
  // --global-batch 16 over the same micro-batches: 4 of them.
  EXPECT_EQ(json_lines("--ranks 2 --global-batch 16 --layout pp=2").at(0).at("layout"),
            "dp=1,tp=1,pp=2,1f1b,mb=4,m=4,zero=0,recompute=none");
  // A named micro-batch size keeps the global batch: 8 / (2 x 2 replicas) = 2.
  EXPECT_EQ(json_lines("--ranks 2 --layout mb=2").at(0).at("layout"), "dp=2,tp=1,pp=1,mb=2,m=2,zero=0,recompute=none");
  const auto [rc, out] = stdout_of(plan_cmd("--ranks 2 --global-batch 6 --layout pp=2 2>&1"));
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--global-batch that is a multiple of 4"), std::string::npos) << out;
}

TEST(PlanOutput, EveryPrintedLayoutTrainsUnderTrainLayoutAsItsKeysDo) {
  std::vector<std::string> layouts;
  for (const nlohmann::json& j : json_lines("--ranks 2 --top 3 --threads 1")) layouts.push_back(j.at("layout"));
  layouts.push_back(json_lines("--ranks 2 --layout pp=2,zb-h1").at(0).at("layout"));
  ASSERT_EQ(layouts.size(), 4u);
  const std::string dir = temp_dir("plan_train_layout");
  for (size_t i = 0; i < layouts.size(); ++i) {
    const std::string run = dir + "/run" + std::to_string(i);
    EXPECT_EQ(train(run, "--layout \"" + layouts[i] + "\""), 0) << layouts[i] << "\n" << read_file(run + ".log");
    EXPECT_EQ(metrics_of(run).size(), 2u) << layouts[i];
  }
  // The pipeline layout as the config's own keys: the same losses and gradient norms, bit for bit.
  const std::string keys = dir + "/keys";
  ASSERT_EQ(train(keys, "--pp 2 --schedule zb-h1 --micro-batch 4 --grad-accum 2"), 0) << read_file(keys + ".log");
  const auto by_layout = metrics_of(dir + "/run3"), by_keys = metrics_of(keys);
  ASSERT_EQ(by_layout.size(), by_keys.size());
  for (size_t s = 0; s < by_keys.size(); ++s) {
    EXPECT_EQ(by_layout[s].at("loss").get<double>(), by_keys[s].at("loss").get<double>()) << s;
    EXPECT_EQ(by_layout[s].at("grad_norm").get<double>(), by_keys[s].at("grad_norm").get<double>()) << s;
  }
}

TEST(PlanOutput, MoeFlopsPerTokenCountTheActiveExpertsOnly) {
  ff::ModelConfig c;
  c.dim = 64, c.n_layers = 3, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160, c.vocab_size = 320, c.seq_len = 32;
  c.moe.n_experts = 8, c.moe.top_k = 2, c.moe.expert_ffn_dim = 48, c.moe.shared_experts = 1, c.moe.moe_layers = "0,2";
  // Per block q 64x64, k and v 32x64, o 64x64. Blocks 0 and 2: the router 8x64 and three 64x48
  // SwiGLU matrices for each of the 2 routed and 1 shared experts a token runs through; block 1
  // dense: 3 x 64x160. The head 320x64. 6 FLOPs per weight plus attention 12 L C T.
  const double attn = 64 * 64 + 2 * 32 * 64 + 64 * 64;
  const double moe = 8 * 64 + 3.0 * 3 * 64 * 48, dense = 3 * 64 * 160;
  const double want = 6 * (3 * attn + 2 * moe + dense + 320 * 64) + 12.0 * 3 * 64 * 32;
  EXPECT_DOUBLE_EQ(ff::training_flops_per_token(c), want);
  c.moe.n_experts = 0;  // the dense model is unchanged
  EXPECT_DOUBLE_EQ(ff::training_flops_per_token(c), 6 * (3 * (attn + dense) + 320 * 64) + 12.0 * 3 * 64 * 32);
}

TEST(PlanOutput, TrainRefusesALayoutFlagBesideLayout) {
  const std::string dir = temp_dir("plan_layout_clash");
  EXPECT_NE(train(dir + "/run", "--layout \"pp=2\" --micro-batch 2"), 0);
  const std::string log = read_file(dir + "/run.log");
  EXPECT_NE(log.find("--micro-batch 2 and --layout both set the layout"), std::string::npos) << log;
  EXPECT_NE(log.find("pp=2,mb=2"), std::string::npos) << log;
}
