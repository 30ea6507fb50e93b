// The planner against published numbers: the ZeRO paper's 7.5B row, Korthikanti et al.'s
// activation formulas per setting, and published large layouts among the planner's top five on
// their clusters.
#include <gtest/gtest.h>

#include "model/parameters.h"
#include "plan/cluster.h"
#include "plan/paper_formulas.h"
#include "plan/search.h"
#include "test_data.h"
#include "train/train_config.h"

using namespace ff;

TEST(PaperTables, ZeroPaperSevenPointFiveBillionOnSixtyFourRanks) {
  // Rajbhandari et al. 2020, Figure 1: 7.5B parameters, N = 64, mixed-precision Adam:
  // baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB per device.
  const double psi = 7.5e9;
  EXPECT_NEAR(zero_state_bytes(psi, 64, 0, StatePrecision::mixed) / 1e9, 120.0, 0.05);
  EXPECT_NEAR(zero_state_bytes(psi, 64, 1, StatePrecision::mixed) / 1e9, 31.4, 0.05);
  EXPECT_NEAR(zero_state_bytes(psi, 64, 2, StatePrecision::mixed) / 1e9, 16.6, 0.05);
  EXPECT_NEAR(zero_state_bytes(psi, 64, 3, StatePrecision::mixed) / 1e9, 1.9, 0.05);
  // Pure fp32 AdamW, the engine's: 8 + 8/N, 4 + 12/N, 16/N bytes per parameter.
  EXPECT_DOUBLE_EQ(zero_state_bytes(100, 4, 1, StatePrecision::fp32), 800 + 200);
  EXPECT_DOUBLE_EQ(zero_state_bytes(100, 4, 2, StatePrecision::fp32), 400 + 300);
  EXPECT_DOUBLE_EQ(zero_state_bytes(100, 4, 3, StatePrecision::fp32), 400);
}

TEST(PaperTables, KorthikantiActivationsPerLayerGpt3) {
  // GPT-3 175B layer: s = 2048, b = 1, h = 12288, a = 96, t = 8. sbh = 25,165,824 and
  // 5as/h = 80, so by hand: none 114 sbh, tp (10 + 3 + 10) sbh, tp + sp 114/8 sbh,
  // tp + selective 13 sbh, tp + sp + selective 34/8 sbh, full 2 sbh.
  const double sbh = 2048.0 * 12288;
  auto k = [](ActivationSetting s) { return korthikanti_layer_bytes(2048, 1, 12288, 96, 8, s); };
  EXPECT_DOUBLE_EQ(k(ActivationSetting::none), 114 * sbh);
  EXPECT_DOUBLE_EQ(k(ActivationSetting::tp), 23 * sbh);
  EXPECT_DOUBLE_EQ(k(ActivationSetting::tp_sp), 14.25 * sbh);
  EXPECT_DOUBLE_EQ(k(ActivationSetting::tp_selective), 13 * sbh);
  EXPECT_DOUBLE_EQ(k(ActivationSetting::tp_sp_selective), 4.25 * sbh);
  EXPECT_DOUBLE_EQ(k(ActivationSetting::full), 2 * sbh);
  // The paper's headline: sequence parallelism + selective recompute keep 5x less than tp alone
  // (23 / 4.25 = 5.4), and flash attention drops the 5as/h term.
  EXPECT_GT(k(ActivationSetting::tp) / k(ActivationSetting::tp_sp_selective), 5.0);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(2048, 1, 12288, 96, 1, ActivationSetting::none, true), 34 * sbh);
}

namespace {
ModelConfig paper_model(const std::string& name) {
  return load_train_config(std::string(FIVEFOLD_SOURCE_DIR) + "/configs/paper/" + name + ".toml", {}).model;
}
ClusterSpec cluster(const std::string& name) {
  return load_cluster(std::string(FIVEFOLD_SOURCE_DIR) + "/configs/clusters/" + name + ".toml");
}
// Where the first layout with these tensor and pipeline degrees ranks (1-based; 0 = absent).
int rank_of(const PlanResult& r, int tp, int pp) {
  for (size_t i = 0; i < r.ranked.size(); ++i)
    if (r.ranked[i].layout.tp == tp && r.ranked[i].layout.pp == pp) return int(i) + 1;
  return 0;
}
}  // namespace

TEST(PaperLayouts, PublishedLayoutsAreAmongTheTopFive) {
  struct Case {
    const char* model;
    const char* cluster;
    int ranks, global_batch, tp, pp;
  };
  // Korthikanti et al. 2022 Table 3 (Megatron on A100s) and Llama 3 405B (H100s, 16M tokens).
  for (const Case& c : {Case{"gpt3_175b", "a100-80gb", 64, 64, 8, 8}, Case{"megatron_530b", "a100-80gb", 280, 280, 8, 35},
                        Case{"llama3_405b", "h100-80gb", 16384, 2048, 8, 16}}) {
    PlanRequest req;
    req.ranks = c.ranks, req.global_batch = c.global_batch;
    const PlanResult r = search_layouts(paper_model(c.model), cluster(c.cluster), req);
    const int at = rank_of(r, c.tp, c.pp);
    EXPECT_GE(at, 1) << c.model;
    EXPECT_LE(at, 5) << c.model << ":\n" << plan_table(r, cluster(c.cluster), 8);
    EXPECT_GT(r.dropped_memory, 0) << c.model;  // memory, not only speed, shapes the answer
  }
}

// The closed-form parameter count against the layout the model allocates, for Llama 2's shape and
// for the additions of current open models: a head_dim other than dim / n_heads and Qwen2's q/k/v
// bias (each changes the block's count), with a tied and an untied head.
TEST(PaperFormulas, ParameterCountIsTheLayoutsTotal) {
  ModelConfig c;
  c.vocab_size = 96, c.dim = 64, c.n_layers = 3, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 160, c.seq_len = 32;
  for (int head : {0, 24})
    for (bool bias : {false, true})
      for (bool tied : {false, true}) {
        c.head_size = head, c.qkv_bias = bias, c.tied_embeddings = tied;
        EXPECT_EQ(llama_parameter_count(c), double(ParamLayout(c).total()))
            << "head_dim " << head << " qkv_bias " << bias << " tied " << tied;
      }
}
