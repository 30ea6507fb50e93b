// `fivefold import --hf`: export then import gives the same parameters bit for bit, the moments
// zero and step 0, and training continues from it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cli_runner.h"
#include "model/parameters.h"
#include "test_data.h"
#include "ckpt/checkpoint_state.h"
#include "ckpt/meta.h"
#include "ckpt/state_pieces.h"

using namespace ff;
using namespace ff::testkit;

TEST(Import, ExportImportRoundTripIsBitwiseAndTrains) {
  const std::string run = temp_dir("imp_run"), hf = temp_dir("imp_hf"), back = temp_dir("imp_back");
  const std::string train = "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                            " --eval-every 0 --threads 1 --out ";
  ASSERT_EQ(run_fivefold(train + run + " --steps 3").exit_code, 0);
  const CliResult ex = run_fivefold("export --ckpt " + run + " --out " + hf);
  ASSERT_EQ(ex.exit_code, 0) << ex.output;
  const CliResult im = run_fivefold("import --hf " + hf + " --out " + back);
  ASSERT_EQ(im.exit_code, 0) << im.output;
  // Both read back through the sharded reader, every buffer of the imported one.
  const CheckpointMeta a = checkpoint_meta_in(run), b = checkpoint_meta_in(back);
  const ParamLayout layout(a.state.model);
  const size_t n = layout.total();
  std::vector<float> pa(n), pb(n), mb(n, 1.0f), vb(n, 1.0f), unused_m(n), unused_v(n);
  auto read_all = [&](const std::string& dir, float* p, float* m, float* v) {
    ShardedCheckpointReader reader(dir);
    StateRuns runs;
    runs.params = {{0, n, p}}, runs.m = {{0, n, m}}, runs.v = {{0, n, v}};
    read_state_pieces(reader, layout, runs);
  };
  read_all(a.dir, pa.data(), unused_m.data(), unused_v.data());
  read_all(b.dir, pb.data(), mb.data(), vb.data());
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), n * sizeof(float)), 0);
  EXPECT_EQ(b.state.step, 0);
  EXPECT_EQ(b.state.tokenizer_checksum, a.state.tokenizer_checksum);
  EXPECT_TRUE(describe_model_difference(a.state.model, b.state.model).empty());
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(mb[i] == 0.0f && vb[i] == 0.0f) << i;
  const CliResult tuned = run_fivefold(train + back + " --steps 2");
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("step     2/2"), std::string::npos) << tuned.output;
  // A folder without config.json is refused by name.
  const CliResult bad = run_fivefold("import --hf " + run + " --out " + temp_dir("imp_bad"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("config.json"), std::string::npos) << bad.output;
}
