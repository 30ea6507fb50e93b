// The run estimates its memory before allocating and refuses, at once, a run that cannot fit,
// naming the estimate, the memory available and a layout that fits.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "cli_runner.h"
#include "plan/memory_model.h"
#include "test_data.h"
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
