// A cluster file calibrated on other CPUs is planned for those CPUs: its bf16_gemm / fp16_gemm keys
// decide a 16-bit layout's packed weight copies, its widened operands and the MFU's peak, whatever
// the machine running `plan` has. Files without the keys keep this machine's answer.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "calibrate/this_machine.h"
#include "plan/cluster.h"
#include "plan/memory_model.h"
#include "plan/step_time.h"
#include "test_data.h"
#include "train/train_config.h"

using namespace ff;
using namespace ff::testkit;

namespace {

// This machine as calibrate describes it, with the 16-bit keys replaced (or dropped: "").
ClusterSpec cluster_with(const std::string& bf16, const std::string& fp16) {
  ClusterSpec c = this_machine(2);
  c.bf16_gemm = bf16, c.fp16_gemm = fp16;
  const std::string path = temp_dir("engine_host") + "/cluster.toml";
  std::ofstream(path) << cluster_to_toml(c);
  return load_cluster(path);
}

ModelConfig small_model() {
  ModelConfig m = load_train_config(config_path("small.toml"), {}).model;
  m.vocab_size = 4096;
  return m;
}

// The weights oneDNN reads packed, from the model's shapes: per block q|k|v and gate|up fused, o
// and down; the untied head. Each is packed twice (x W^T and dy W), bf16, N to 64 and K to 32.
int64_t packed_bytes_by_hand(const ModelConfig& m) {
  auto up = [](int64_t n, int64_t b) { return (n + b - 1) / b * b; };
  auto both = [&](int64_t out, int64_t in) { return 2 * (up(out, 64) * up(in, 32) + up(in, 64) * up(out, 32)); };
  const int64_t per_block = both(m.qkv_dim(), m.dim) + both(m.dim, m.n_heads * m.head_dim()) +
                            both(2 * int64_t(m.ffn_dim), m.dim) + both(m.dim, m.ffn_dim);
  return m.n_layers * per_block + both(m.vocab_size, m.dim);
}

}  // namespace

TEST(EngineHost, ClusterKeysRoundTripAndThisMachineKeepsItsOwnPath) {
  const ClusterSpec here = this_machine(2);
  ASSERT_FALSE(here.bf16_gemm.empty());
  const ClusterSpec back = cluster_with(here.bf16_gemm, here.fp16_gemm);
  EXPECT_EQ(back.bf16_gemm, here.bf16_gemm);
  EXPECT_EQ(back.fp16_gemm, here.fp16_gemm);
  const EngineHost a = back.engine_host(3), b = this_engine_host(3);
  EXPECT_EQ(a.native_bf16, b.native_bf16);
  EXPECT_EQ(a.native_fp16, b.native_fp16);
  EXPECT_EQ(a.threads, 3);
  // An older file (no keys) is this machine too.
  const EngineHost old = cluster_with("", "").engine_host(3);
  EXPECT_EQ(old.native_bf16, b.native_bf16);
  EXPECT_EQ(old.native_fp16, b.native_fp16);
}

TEST(EngineHost, Bf16MemoryFollowsTheClusterFileNotThisMachine) {
  const ModelConfig m = small_model();
  LayoutSpec L;
  L.dp = 2, L.micro_batch = 8, L.zero = 1, L.gemm = Precision::bf16;
  const LayoutPrediction units = predict_layout(m, L, cluster_with("AVX512-BF16", "widened"), 1);
  const LayoutPrediction widened = predict_layout(m, L, cluster_with("widened", "widened"), 1);
  // The bf16 units' run keeps the packed copies (params) and no widened operands (workspace).
  EXPECT_EQ(units.memory[MemCategory::params] - widened.memory[MemCategory::params], packed_bytes_by_hand(m));
  EXPECT_LT(units.memory[MemCategory::workspace], widened.memory[MemCategory::workspace]);
  for (MemCategory k : {MemCategory::grads, MemCategory::optimizer, MemCategory::activations})
    EXPECT_EQ(units.memory[k], widened.memory[k]) << mem_category_name(k);
  // fp32 layouts do not depend on the keys.
  L.gemm = Precision::fp32;
  EXPECT_EQ(predict_layout(m, L, cluster_with("AVX512-BF16", "oneDNN"), 1).memory.peak(),
            predict_layout(m, L, cluster_with("widened", "widened"), 1).memory.peak());
}

TEST(EngineHost, Bf16PeakIsTwiceTheFmaPeakOnlyOnBf16Units) {
  for (const char* path : {"AMX", "AVX512-BF16"}) {
    const ClusterSpec c = cluster_with(path, "widened");
    EXPECT_DOUBLE_EQ(c.peak16(), 2 * c.peak_flops) << path;
  }
  for (const char* path : {"oneDNN", "widened"}) {
    const ClusterSpec c = cluster_with(path, "widened");
    EXPECT_DOUBLE_EQ(c.peak16(), c.peak_flops) << path;
  }
}

TEST(EngineHost, AnUnknownPathNamesTheKeyAndTheChoices) {
  try {
    cluster_with("AVX2", "widened");
    FAIL() << "accepted bf16_gemm = AVX2";
  } catch (const std::runtime_error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("bf16_gemm"), std::string::npos) << w;
    EXPECT_NE(w.find("\"widened\""), std::string::npos) << w;
    EXPECT_NE(w.find("'AVX2'"), std::string::npos) << w;
  }
}
