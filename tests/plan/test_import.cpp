// `fivefold import --hf`: export then import gives the same parameters bit for bit, the moments
// zero and step 0, and training continues from it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cli_runner.h"
#include "model/parameters.h"
#include "test_data.h"
#include "train/checkpoint.h"

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
  const CheckpointState a = load_checkpoint(run + "/checkpoint.bin", nullptr, nullptr, nullptr, 0);
  const size_t n = ParamLayout(a.model).total();
  std::vector<float> pa(n), pb(n), mb(n, 1.0f), vb(n, 1.0f);
  load_checkpoint(run + "/checkpoint.bin", pa.data(), nullptr, nullptr, n);
  const CheckpointState b = load_checkpoint(back + "/checkpoint.bin", pb.data(), mb.data(), vb.data(), n);
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), n * sizeof(float)), 0);
  EXPECT_EQ(b.step, 0);
  EXPECT_EQ(b.tokenizer_checksum, a.tokenizer_checksum);
  EXPECT_TRUE(describe_model_difference(a.model, b.model).empty());
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(mb[i] == 0.0f && vb[i] == 0.0f) << i;
  const CliResult tuned = run_fivefold(train + back + " --steps 2");
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("step     2/2"), std::string::npos) << tuned.output;
  // A folder without config.json is refused by name.
  const CliResult bad = run_fivefold("import --hf " + run + " --out " + temp_dir("imp_bad"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("config.json"), std::string::npos) << bad.output;
}
