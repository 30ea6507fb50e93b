// The run estimates its memory before allocating and refuses, at once, a run that cannot fit,
// naming the estimate, the memory available and a layout that fits.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "cli_runner.h"
#include "plan/memory_model.h"
#include "test_data.h"
#include "train/memory_check.h"
#include "train/train_config.h"

using namespace ff;
using namespace ff::testkit;

namespace {
std::string tiny_train(const std::string& out, const std::string& extra) {
  return "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() + " --out " + out +
         " --eval-every 0 --threads 1 " + extra;
}
bool has(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }
}  // namespace

TEST(MemoryCheck, HugeModelIsRefusedAtOnceNotWithBadAlloc) {
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_fivefold(tiny_train(temp_dir("huge"), "--dim 1000000 --n-layers 1000"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has(r.output, "bad_alloc")) << r.output;
  EXPECT_TRUE(has(r.output, "this run needs about")) << r.output;
  EXPECT_TRUE(has(r.output, "MemAvailable")) << r.output;
  // ~1e15 parameters: no number of ranks on machines like this one holds it, and the message says
  // what to change instead.
  EXPECT_TRUE(has(r.output, "make the model smaller")) << r.output;
  EXPECT_LT(seconds, 5.0) << r.output;  // it used to allocate for 7 s and die
}

TEST(MemoryCheck, RefusalNamesALayoutThatFitsAndThatLayoutRuns) {
  // A machine with room for tiny at micro-batch 64 only when activations are recomputed: the
  // budget sits between the full-recompute and the no-recompute estimates.
  TrainConfig c = load_train_config(config_path("tiny.toml"), {});
  c.model.vocab_size = 320;  // tiny_data_dir()'s tokenizer
  LayoutSpec none;
  none.micro_batch = 64;
  LayoutSpec full = none;
  full.recompute = Recompute::full;
  const int64_t need_none = estimate_peak_memory(c.model, none, this_engine_host(1)).peak();
  const int64_t need_full = estimate_peak_memory(c.model, full, this_engine_host(1)).peak();
  ASSERT_LT(need_full, need_none);
  const std::string budget = std::to_string((need_full + need_none) / 2);
  ::setenv("FIVEFOLD_MEM_AVAILABLE", budget.c_str(), 1);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const CliResult r = run_fivefold(tiny_train(temp_dir("tight"), "--micro-batch 64 --steps 1"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "a layout that fits")) << r.output;
  EXPECT_TRUE(has(r.output, "recompute=")) << r.output;
  // The suggestion is selective or full recompute; run the one it names under the same budget.
  const std::string policy = has(r.output, "recompute=selective") ? "selective" : "full";
  const CliResult ok = run_fivefold(tiny_train(temp_dir("tight_ok"), "--micro-batch 64 --steps 1 --recompute " + policy));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(has(ok.output, "memory per rank (estimated)")) << ok.output;
  ::unsetenv("FIVEFOLD_MEM_AVAILABLE");
}

namespace {
// TinyLlama-1.1B's shape (its config.json), trained in bf16 on sequences of 256 tokens.
TrainConfig tinyllama_bf16(int zero) {
  TrainConfig c;
  c.model.vocab_size = 32000, c.model.dim = 2048, c.model.n_layers = 22, c.model.n_heads = 32;
  c.model.n_kv_heads = 4, c.model.ffn_dim = 5632, c.model.seq_len = 256, c.model.tied_embeddings = false;
  c.precision = Precision::bf16;
  c.dp = 2, c.zero = zero, c.micro_batch = 1, c.grad_accum = 1, c.threads = 1;
  return c;
}
// Its parameters, counted from the shape alone: embedding and head, per layer q, k, v, o, the
// SwiGLU's three matrices and two norms, the final norm. TinyLlama's model card says 1.1B.
double tinyllama_parameters() {
  const double V = 32000, D = 2048, L = 22, F = 5632, kv = 4 * (2048 / 32);
  return 2 * V * D + L * (D * D + 2 * D * kv + D * D + 3 * D * F + 2 * D) + D;
}
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A machine of 24 GiB with two ranks on it, whatever machine runs the test.
struct TwoRanksOn24GiB {
  TwoRanksOn24GiB() {
    ::setenv("FIVEFOLD_MEM_AVAILABLE", std::to_string(int64_t(24 * kGiB)).c_str(), 1);
    ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  }
  ~TwoRanksOn24GiB() {
    ::unsetenv("FIVEFOLD_MEM_AVAILABLE");
    ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  }
};
}  // namespace

TEST(MemoryCheck, TinyLlamaInBf16OnTwoRanksIsRefusedUnshardedAndZero3IsNamed) {
  ASSERT_NEAR(tinyllama_parameters(), 1.100048384e9, 1.0);  // the published count, 1,100,048,384
  const TwoRanksOn24GiB machine;
  const TrainConfig unsharded = tinyllama_bf16(0);
  // Replicated Adam states alone are 16 bytes a parameter (fp32 weight, gradient, two moments):
  // 16.4 GiB against the 12 GiB each of two ranks gets.
  ASSERT_GT(16 * tinyllama_parameters(), 12 * kGiB);
  std::string refusal;
  try {
    check_memory_fits(unsharded);
  } catch (const std::runtime_error& e) {
    refusal = e.what();
  }
  ASSERT_FALSE(refusal.empty()) << "dp 2, zero 0 was not refused";
  EXPECT_TRUE(has(refusal, "this run needs about")) << refusal;
  EXPECT_TRUE(has(refusal, "12.00 GiB available for each of its 2 ranks")) << refusal;
  // The layout it names fits on these two ranks: the same dp 2 with the model states sharded.
  EXPECT_TRUE(has(refusal, "a layout that fits: dp=2,tp=1,pp=1,mb=1,m=1,zero=3,")) << refusal;
  EXPECT_FALSE(has(refusal, "machines like this one")) << refusal;
  // ... and the check accepts that layout on the same machine.
  const MemoryCheck sharded = check_memory_fits(tinyllama_bf16(3));
  EXPECT_LE(sharded.estimate.peak(), 12 * kGiB) << sharded.line;
  // No rank holds the whole model: fp32 weights, gradients and moments are each half of it
  // (segments split in two, the first rank's half rounded up), and there is no 16-bit copy.
  const double half = std::ceil(tinyllama_parameters() / 2) * 4;
  EXPECT_NEAR(double(sharded.estimate[MemCategory::params]), half, 4.0 * 22 * 9 + 12);
  EXPECT_NEAR(double(sharded.estimate[MemCategory::grads]), half, 4.0 * 22 * 9 + 12);
  EXPECT_NEAR(double(sharded.estimate[MemCategory::optimizer]), 2 * half, 8.0 * 22 * 9 + 24);
}
