// Config key `packed_weights`: a bf16 run with the weights' packed copies off trains the
// same numbers bit for bit (the packed product is the plain one, kernels/packed_weights.h) and
// holds exactly the packed copies' bytes less in the ledger's params category, as the planner's
// formula for them says.
#include <gtest/gtest.h>

#include <string>

#include "core/memory.h"
#include "kernels/gemm.h"
#include "onednn_bf16_paths.h"
#include "plan/layout_workspace.h"
#include "test_data.h"
#include "train/memory_check.h"
#include "train/trainer.h"
#include "train_fixtures.h"

namespace {

using namespace ff;

struct Outcome {
  std::vector<StepRecord> history;
  int64_t params_bytes = 0;  // ledger params category while the trainer lives, after its steps
  int64_t predicted_packed = 0;
};

Outcome train(bool packed) {
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 3;
  c.precision = Precision::bf16;
  c.packed_weights = packed;
  Trainer t(c, testkit::temp_dir(packed ? "packed_on" : "packed_off"), nullptr);
  t.quiet = true;
  for (int s = 0; s < c.steps; ++s) t.train_step();
  Outcome o;
  o.history = t.history();
  o.params_bytes = MemoryLedger::instance().snapshot().current[int(MemCategory::params)];
  LayoutSpec L = layout_of(c);
  L.gemm = Precision::bf16;
  o.predicted_packed =
      packed_weight_bytes(t.model().layout(), c.model, L, this_engine_host(c.threads, c.packed_weights));
  return o;
}

TEST(PackedWeightsKey, OffTrainsTheSameNumbersWithoutThePackedBytes) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is packed"); !why.empty()) GTEST_SKIP() << why;
  const Outcome on = train(true);
  const Outcome off = train(false);
  ASSERT_EQ(on.history.size(), 3u);
  ASSERT_EQ(off.history.size(), 3u);
  for (size_t i = 0; i < on.history.size(); ++i) {
    EXPECT_EQ(on.history[i].loss, off.history[i].loss) << "step " << i + 1;
    EXPECT_EQ(on.history[i].grad_norm, off.history[i].grad_norm) << "step " << i + 1;
  }
  EXPECT_EQ(off.predicted_packed, 0);
  ASSERT_GT(on.predicted_packed, 0);
  EXPECT_EQ(on.params_bytes - off.params_bytes, on.predicted_packed);
}

}  // namespace
