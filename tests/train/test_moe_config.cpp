// Bad MoE input is refused before any work, naming the keys and the fix.
#include <gtest/gtest.h>

#include <functional>

#include "test_data.h"
#include "train/train_config.h"

using namespace ff;

namespace {

std::string error_of(const std::vector<std::pair<std::string, std::string>>& overrides) {
  try {
    TrainConfig c = load_train_config(testkit::config_path("tiny.toml"), overrides);
    c.data = "unused";
    validate_train_config(c);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::vector<std::pair<std::string, std::string>>& overrides,
                  std::initializer_list<const char*> words) {
  const std::string e = error_of(overrides);
  ASSERT_FALSE(e.empty()) << "accepted";
  for (const char* w : words) EXPECT_NE(e.find(w), std::string::npos) << "'" << w << "' not in: " << e;
}

}  // namespace

TEST(MoeConfig, GoodInputPasses) {
  EXPECT_EQ(error_of({{"n_experts", "8"}, {"top_k", "2"}, {"ep", "2"}, {"dp", "2"}, {"router", "sigmoid"},
                      {"moe_layers", "0,1"}, {"capacity_factor", "1.25"}, {"shared_experts", "1"}}),
            "");
}

TEST(MoeConfig, BadInputNamesTheKeys) {
  expect_error({{"n_experts", "6"}, {"ep", "4"}, {"dp", "4"}}, {"n_experts (6)", "ep (4)", "divisible"});
  expect_error({{"n_experts", "4"}, {"ep", "4"}, {"dp", "2"}}, {"ep (4)", "dp x cp"});
  expect_error({{"n_experts", "4"}, {"top_k", "5"}}, {"top_k (5)", "n_experts (4)"});
  expect_error({{"n_experts", "4"}, {"capacity_factor", "-1"}}, {"capacity_factor", "> 0", "0 for dropless"});
  expect_error({{"n_experts", "4"}, {"router", "relu"}}, {"router", "softmax or sigmoid"});
  expect_error({{"n_experts", "4"}, {"moe_layers", "0,7"}}, {"moe_layers", "'7'", "[0, 2)"});
  expect_error({{"ep", "2"}, {"dp", "2"}}, {"ep = 2", "n_experts"});
  expect_error({{"n_experts", "4"}, {"ep", "2"}, {"dp", "2"}, {"zero", "3"}}, {"zero = 3", "ep", "zero <= 1"});
  expect_error({{"n_experts", "4"}, {"pp", "2"}, {"grad_accum", "2"}, {"schedule", "zb-h1"}}, {"zb-h1", "MoE"});
}
