// `fivefold import --hf`: export then import gives the same parameters bit for bit in a
// weights-only checkpoint at step 0 (no optimizer moments), and training continues from it.
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

TEST(Import, ExportImportRoundTripIsBitwiseAndWeightsOnly) {
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
  std::vector<float> pa(n), pb(n);
  auto read_params = [&](const std::string& dir, float* p) {
    ShardedCheckpointReader reader(dir);
    read_state_pieces(reader, layout, StateRuns{{{0, n, p}}, {}, {}}, /*params_only=*/true);
  };
  read_params(a.dir, pa.data());
  read_params(b.dir, pb.data());
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), n * sizeof(float)), 0);
  EXPECT_EQ(b.state.step, 0);
  EXPECT_TRUE(b.state.weights_only);
  EXPECT_FALSE(a.state.weights_only);
  EXPECT_EQ(b.state.tokenizer_checksum, a.state.tokenizer_checksum);
  EXPECT_TRUE(describe_model_difference(a.state.model, b.state.model).empty());
  // Weights only: the manifest lists parameters and nothing else.
  for (const ShardFileRecord& f : read_manifest(b.dir).files)
    for (const PieceRecord& p : f.pieces) ASSERT_EQ(p.tensor.rfind("params/", 0), 0u) << p.tensor;
  // A folder without config.json is refused by name.
  const CliResult bad = run_fivefold("import --hf " + run + " --out " + temp_dir("imp_bad"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("config.json"), std::string::npos) << bad.output;
}

// The imported run folder trains: its weights-only checkpoint starts a fresh optimizer at step 0.
TEST(Import, ImportedRunTrains) {
  const std::string run = temp_dir("imp_run2"), hf = temp_dir("imp_hf2"), back = temp_dir("imp_back2");
  const std::string train = "train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                            " --eval-every 0 --threads 1 --out ";
  ASSERT_EQ(run_fivefold(train + run + " --steps 3").exit_code, 0);
  ASSERT_EQ(run_fivefold("export --ckpt " + run + " --out " + hf).exit_code, 0);
  ASSERT_EQ(run_fivefold("import --hf " + hf + " --out " + back).exit_code, 0);
  const CliResult tuned = run_fivefold(train + back + " --steps 2");
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("step     2/2"), std::string::npos) << tuned.output;
}
