#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_data.h"
#include "train/slurm_tasks.h"
#include "train/train_config.h"

using namespace ff;

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, CommandLineOverridesFileAndDashesAreUnderscores) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"),
                                    {{"micro-batch", "2"}, {"recompute", "full"}, {"lr", "0.5"}});
  EXPECT_EQ(c.micro_batch, 2);
  EXPECT_EQ(c.recompute, Recompute::full);
  EXPECT_FLOAT_EQ(c.lr, 0.5f);
  EXPECT_EQ(c.model.dim, 64);  // from the file
}

TEST(TrainConfig, UnknownKeySuggestsTheNearestOne) {
  std::string e = error_of([] { load_train_config("", {{"micro_bach", "2"}}); });
  EXPECT_NE(e.find("unknown config key 'micro_bach'"), std::string::npos) << e;
  EXPECT_NE(e.find("Did you mean 'micro_batch'"), std::string::npos) << e;
  std::string dir = testkit::temp_dir("cfg");
  std::ofstream(dir + "/bad.toml") << "dim = 64\nlayers = 3\n";
  e = error_of([&] { load_train_config(dir + "/bad.toml", {}); });
  EXPECT_NE(e.find("unknown config key 'layers'"), std::string::npos) << e;
  EXPECT_NE(e.find("bad.toml"), std::string::npos) << e;
}

TEST(TrainConfig, BadValuesNameTheKey) {
  EXPECT_NE(error_of([] { load_train_config("", {{"steps", "ten"}}); }).find("'steps'"), std::string::npos);
  EXPECT_NE(error_of([] { load_train_config("", {{"recompute", "some"}}); }).find("none | selective | full"),
            std::string::npos);
}

TEST(TrainConfig, SavedConfigReloadsToTheSameValues) {
  TrainConfig c = load_train_config(testkit::config_path("small.toml"), {{"seed", "5"}});
  std::string dir = testkit::temp_dir("cfg");
  std::ofstream(dir + "/resolved.toml") << config_to_toml(c);
  TrainConfig back = load_train_config(dir + "/resolved.toml", {});
  EXPECT_EQ(config_to_toml(back), config_to_toml(c));
}

// Each of these was accepted (or explained wrongly) before.
TEST(TrainConfig, NumericGapsAreRefusedNamingTheKey) {
  auto refusal = [&](const std::vector<std::pair<std::string, std::string>>& overrides) {
    return error_of([&] {
      TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), overrides);
      validate_train_config(c);
    });
  };
  EXPECT_EQ(refusal({}), "");
  EXPECT_NE(refusal({{"adam_eps", "0"}}).find("adam_eps must be a positive number (got 0)"),
            std::string::npos);
  EXPECT_NE(refusal({{"weight_decay", "nan"}}).find("weight_decay must be a number >= 0 (got nan)"),
            std::string::npos);
  EXPECT_NE(refusal({{"init_std", "nan"}}).find("init_std must be a number >= 0 (got nan)"),
            std::string::npos);
  EXPECT_NE(refusal({{"rope_theta", "inf"}}).find("rope_theta must be finite"), std::string::npos);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const std::string too_many = refusal({{"threads", std::to_string(4 * cores + 1)}});
  EXPECT_NE(too_many.find("threads = " + std::to_string(4 * cores + 1)), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("at most " + std::to_string(4 * cores)), std::string::npos) << too_many;
  EXPECT_EQ(refusal({{"threads", std::to_string(4 * cores)}}), "");
}

TEST(TrainConfig, BareFlagSaysTheValueIsMissing) {
  // parse_args turns `--dim` with nothing after it into "true".
  const std::string e = error_of([] { load_train_config("", {{"dim", "true"}}); });
  EXPECT_NE(e.find("--dim needs a value"), std::string::npos) << e;
  EXPECT_EQ(e.find("not a valid integer"), std::string::npos) << e;
}

TEST(TrainConfig, TomlTypesAreStrict) {
  const std::string dir = testkit::temp_dir("cfg");
  auto error_for = [&](const std::string& line) {
    std::ofstream(dir + "/t.toml") << line << "\n";
    return error_of([&] { load_train_config(dir + "/t.toml", {}); });
  };
  for (const char* line : {"dim = \"64\"", "dim = 64.0", "dim = 1e2"}) {
    const std::string e = error_for(line);
    EXPECT_NE(e.find("key 'dim'"), std::string::npos) << line << ": " << e;
    EXPECT_NE(e.find("must be an integer"), std::string::npos) << line << ": " << e;
    EXPECT_NE(e.find("t.toml"), std::string::npos) << line << ": " << e;
  }
  const std::string b = error_for("tied_embeddings = 1");
  EXPECT_NE(b.find("key 'tied_embeddings' is 1 but must be true or false"), std::string::npos) << b;
  EXPECT_NE(error_for("recompute = 1").find("must be a string"), std::string::npos);
  EXPECT_NE(error_for("lr = \"0.1\"").find("must be a number"), std::string::npos);
  // Exact conversions stay: an integer for a real-valued key.
  std::ofstream(dir + "/ok.toml") << "rope_theta = 10000\ndim = 32\ntied_embeddings = true\n";
  const TrainConfig c = load_train_config(dir + "/ok.toml", {});
  EXPECT_EQ(c.model.rope_theta, 10000.0f);
  EXPECT_EQ(c.model.dim, 32);
  EXPECT_TRUE(c.model.tied_embeddings);
}

TEST(TrainConfig, DocMaskIsOffByDefaultAndAFlag) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {});
  EXPECT_FALSE(c.doc_mask);
  c = load_train_config(testkit::config_path("tiny.toml"), {{"doc-mask", "true"}, {"cp", "2"}});
  EXPECT_TRUE(c.doc_mask);
  validate_train_config(c);  // every layout takes it, context parallelism included
  EXPECT_NE(error_of([] { load_train_config("", {{"doc-mask", "yes"}}); }).find("'doc_mask'"), std::string::npos);
}

TEST(TrainConfig, SavedDocMaskIsReadFromACheckpointsConfig) {
  TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), {{"doc-mask", "true"}});
  EXPECT_TRUE(saved_doc_mask(config_to_toml(c)));
  c.doc_mask = false;
  EXPECT_FALSE(saved_doc_mask(config_to_toml(c)));
  EXPECT_FALSE(saved_doc_mask(""));            // a checkpoint that saved no config
  EXPECT_FALSE(saved_doc_mask("steps = 3\n"));  // a run from before the key
}

// Slurm's tasks-per-node lists, read by hand from the format srun documents: "N(xK)" is N tasks
// on each of K nodes, entries in node order.
TEST(RanksOnThisMachine, SlurmTasksPerNodeList) {
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x2)", 0), 2);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x2)", 1), 2);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x2)", 2), 0);
  EXPECT_EQ(ff::slurm_tasks_on_node("3,1", 1), 1);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x3),1,4(x2)", 2), 2);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x3),1,4(x2)", 3), 1);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x3),1,4(x2)", 5), 4);
  EXPECT_EQ(ff::slurm_tasks_on_node("2(x3),1,4(x2)", 6), 0);
  for (const char* bad : {"", "x", "2(x", "2(x)", "2x2", "0", "2(x0)", "2(x2)3"})
    EXPECT_EQ(ff::slurm_tasks_on_node(bad, 0), 0) << bad;
  EXPECT_EQ(ff::slurm_tasks_on_node("2", -1), 0);
}

// mpirun's count first, then srun's per-step list at this node, then --ntasks-per-node.
TEST(RanksOnThisMachine, LauncherVariablesInOrder) {
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID",
                        "SLURM_NTASKS_PER_NODE"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* v : vars)
    if (const char* old = std::getenv(v)) saved.emplace_back(v, old);
  for (const char* v : vars) ::unsetenv(v);
  EXPECT_EQ(ff::ranks_on_this_machine(), 1);
  ::setenv("SLURM_NTASKS_PER_NODE", "5", 1);
  EXPECT_EQ(ff::ranks_on_this_machine(), 5);
  ::setenv("SLURM_STEP_TASKS_PER_NODE", "3,2", 1);
  ::setenv("SLURM_NODEID", "1", 1);
  EXPECT_EQ(ff::ranks_on_this_machine(), 2);
  ::setenv("SLURM_NODEID", "2", 1);  // not in the list: the next variable
  EXPECT_EQ(ff::ranks_on_this_machine(), 5);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  EXPECT_EQ(ff::ranks_on_this_machine(), 4);
  for (const char* v : vars) ::unsetenv(v);
  for (const auto& [name, value] : saved) ::setenv(name.c_str(), value.c_str(), 1);
}
