#include <gtest/gtest.h>

#include <fstream>

#include "test_data.h"
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
