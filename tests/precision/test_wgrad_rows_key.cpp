// Config key `wgrad_rows`: a bf16 run on 2 threads computes its weight gradients with
// dW's rows dealt out to the threads (kernels/wgrad_rows.h) when on, and as one oneDNN matmul over
// both threads when off (the path before the key existed; the kernel test holds it bitwise to that
// product). The split may sum a gradient's fp32 terms in another order (on `bench` it does; on this
// tiny model, K = 128 tokens, the bits happen to agree), so the runs are held to bf16-training
// accuracy, not bit for bit; and an fp32 run never takes the split.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/gemm.h"
#include "onednn_bf16_paths.h"
#include "test_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

namespace {

using namespace ff;

struct Outcome {
  std::vector<StepRecord> history;
  long split_products = 0;  // weight gradients computed split during the run
};

Outcome train(Precision precision, bool rows) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 3;
  c.threads = 2;
  c.precision = precision;
  c.wgrad_rows = rows;
  Outcome o;
  Trainer t(c, testkit::temp_dir(std::string("wgrad_rows_") + precision_name(precision) + (rows ? "_on" : "_off")),
            nullptr);
  t.quiet = true;
  for (int s = 0; s < c.steps; ++s) t.train_step();
  o.history = t.history();
  o.split_products = t.gemm_counts().wgrad_rows_products.load();
  return o;
}

TEST(WgradRowsKey, OnSplitsTheWeightGradientsOffDoesNotAndTheyTrainAlike) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is split"); !why.empty()) GTEST_SKIP() << why;
  const Outcome on = train(Precision::bf16, true), off = train(Precision::bf16, false);
  ASSERT_EQ(on.history.size(), 3u);
  ASSERT_EQ(off.history.size(), 3u);
  EXPECT_GT(on.split_products, 0);
  EXPECT_EQ(off.split_products, 0);
  for (size_t i = 0; i < on.history.size(); ++i) {
    // fp32 sums in another order inside bf16 training: far below bf16's 2^-8 relative step.
    EXPECT_NEAR(on.history[i].loss, off.history[i].loss, 1e-4 * std::fabs(off.history[i].loss)) << "step " << i + 1;
    EXPECT_NEAR(on.history[i].grad_norm, off.history[i].grad_norm, 1e-3 * off.history[i].grad_norm)
        << "step " << i + 1;
  }
  EXPECT_EQ(train(Precision::fp32, true).split_products, 0);  // fp32: the fp32 GEMM, untouched
}

}  // namespace
