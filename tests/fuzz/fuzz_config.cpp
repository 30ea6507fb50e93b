// Config TOML: a damaged file is refused naming the file, or it loads to a config whose saved
// form loads back to the same config (nothing was half-read or silently converted).
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "test_data.h"
#include "train/train_config.h"

using namespace ff;
using namespace ff::fuzz;

namespace {

// Values that tempt a lenient reader: quoted numbers, floats for integers, 1 for true, overflow.
const char* const kValues[] = {"\"64\"", "64.0", "1e2", "1", "0", "-1", "true", "nan", "inf", "[1, 2]",
                               "{ a = 1 }", "99999999999999999999", "\"\"", "2147483648", "0.5"};

std::string replace_a_value(const std::string& text, RngState& rng) {
  std::vector<size_t> eqs;
  for (size_t i = text.find(" = "); i != std::string::npos; i = text.find(" = ", i + 1)) eqs.push_back(i + 3);
  if (eqs.empty()) return text;
  const size_t at = eqs[rng.next_below(eqs.size())];
  size_t end = text.find_first_of(" \n#", at);
  if (end == std::string::npos) end = text.size();
  return text.substr(0, at) + kValues[rng.next_below(std::size(kValues))] + text.substr(end);
}

}  // namespace

TEST(FuzzConfig, DamagedTomlIsRefusedOrRoundTrips) {
  const Scratch scratch;
  const std::string dir = scratch.path(), path = dir + "/case.toml";
  const std::string good = read_bytes(testkit::config_path("tiny.toml"));
  RngState rng{16007, 0};
  int refused = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string bad = rng.next_below(2) ? replace_a_value(good, rng) : mutate(good, rng);
    write_bytes(path, bad);
    TrainConfig c;
    if (run_case(path, [&] { c = load_train_config(path, {}); }) == Outcome::accepted) {
      write_bytes(dir + "/saved.toml", config_to_toml(c));
      ASSERT_EQ(config_to_toml(load_train_config(dir + "/saved.toml", {})), config_to_toml(c)) << bad;
      try {
        validate_train_config(c);
      } catch (const std::runtime_error& e) {
        const std::string msg = e.what();
        ASSERT_TRUE(msg.rfind("config", 0) == 0 || msg.rfind("model config", 0) == 0) << msg;
      }
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 300);
}
