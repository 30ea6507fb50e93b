// `fivefold train --init-from DIR` as a user runs it: no --config (the model comes from DIR), the
// start said on stdout, the same command again resumes and says init_from is ignored, a shape
// flag that contradicts DIR is refused by name with both values, and --help lists the key.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;

TEST(InitFromCli, TrainsFromARunFolderWithoutAConfigThenResumes) {
  const std::string dir = temp_dir("initcli"), data = tiny_data_dir();
  CliResult r = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + data + " --out " + dir +
                             "/source --steps 4 --eval-every 0 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string ft = "train --init-from " + dir + "/source --data " + data + " --out " + dir +
                         "/ft --micro-batch 4 --eval-every 0 --threads 1 --steps 4";
  r = run_fivefold(ft + " --stop-at 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("starting from the weights of " + dir + "/source/step_4 (step 4 of the run that saved "
                          "them): step 0, fresh optimizer"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("model: dim 64,"), std::string::npos) << "the model's keys come from the source: " << r.output;
  EXPECT_NE(r.output.find("step     2/4"), std::string::npos) << r.output;

  r = run_fivefold(ft);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from step 2 of 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("init_from '" + dir + "/source' is ignored: " + dir + "/ft already holds a checkpoint"),
            std::string::npos)
      << r.output;

  r = run_fivefold("train --init-from " + dir + "/source --data " + data + " --out " + dir + "/other --dim 32");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("dim is 64 in " + dir + "/source's checkpoint but 32 here (--dim); drop the key or make it 64"),
            std::string::npos)
      << r.output;

  r = run_fivefold("train --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("init_from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--init-from MODEL_DIR"), std::string::npos) << r.output;
}
