// fp16's dynamic loss scaling. The scaler against the two published rules, each written out here
// independently of src/train/loss_scaler.cpp: PyTorch's GradScaler (torch/amp/grad_scaler.py,
// _amp_update_scale_: on inf scale *= backoff and the growth tracker resets; otherwise the
// tracker counts up and at growth_interval the scale grows and the tracker resets) and
// Megatron-LM's DynamicGradScaler (the same plus hysteresis). Then a real fp16 training run with
// forced overflows: exactly those steps are skipped (parameters untouched), the others update,
// and the scale follows the rule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_data.h"
#include "train/loss_scaler.h"
#include "train/trainer.h"
#include "train_fixtures.h"

namespace {

// torch.cuda.amp.GradScaler(init_scale, growth_factor=2, backoff_factor=0.5, growth_interval).
std::vector<double> grad_scaler_trajectory(const std::vector<bool>& inf, double init, int interval) {
  double scale = init;
  int growth_tracker = 0;
  std::vector<double> out;
  for (bool found_inf : inf) {
    out.push_back(scale);  // the scale the step's gradients carried
    if (found_inf) {
      scale *= 0.5;
      growth_tracker = 0;
    } else if (growth_tracker + 1 == interval) {
      scale *= 2.0;
      growth_tracker = 0;
    } else {
      growth_tracker += 1;
    }
  }
  return out;
}

// Megatron-LM DynamicGradScaler.update(found_inf) with min_scale 0.
std::vector<double> megatron_trajectory(const std::vector<bool>& inf, double init, int interval, int hysteresis) {
  double scale = init;
  int growth_tracker = 0, hysteresis_tracker = hysteresis;
  std::vector<double> out;
  for (bool found_inf : inf) {
    out.push_back(scale);
    if (found_inf) {
      growth_tracker = 0;
      hysteresis_tracker -= 1;
      if (hysteresis_tracker <= 0) scale *= 0.5;
    } else {
      growth_tracker += 1;
      if (growth_tracker == interval) {
        growth_tracker = 0;
        hysteresis_tracker = hysteresis;
        scale *= 2.0;
      }
    }
  }
  return out;
}

std::vector<double> scaler_trajectory(const std::vector<bool>& inf, const ff::LossScaleConfig& c) {
  ff::LossScaler s(c);
  std::vector<double> out;
  for (bool found_inf : inf) {
    out.push_back(s.scale());
    s.update(found_inf);
  }
  return out;
}

std::vector<bool> random_overflows(int n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<bool> v(n);
  for (int i = 0; i < n; ++i) v[i] = gen() % 5 == 0;  // bursts and isolated overflows both occur
  return v;
}

TEST(LossScaler, HysteresisOneIsPyTorchGradScaler) {
  for (uint64_t seed : {1, 2, 3}) {
    const auto inf = random_overflows(300, seed);
    EXPECT_EQ(scaler_trajectory(inf, {65536.0f, 3, 1}), grad_scaler_trajectory(inf, 65536.0, 3)) << seed;
  }
}

TEST(LossScaler, HysteresisTwoIsMegatronsRule) {
  for (uint64_t seed : {4, 5, 6}) {
    const auto inf = random_overflows(300, seed);
    EXPECT_EQ(scaler_trajectory(inf, {65536.0f, 3, 2}), megatron_trajectory(inf, 65536.0, 3, 2)) << seed;
  }
  // Defaults (2^16, 2000, 2): one overflow leaves the scale, a second halves it; 2000 clean double it.
  std::vector<bool> inf(4003, false);
  inf[0] = inf[1] = true;
  const auto t = scaler_trajectory(inf, {});
  EXPECT_EQ(t[1], 65536.0);
  EXPECT_EQ(t[2], 32768.0);
  EXPECT_EQ(t[2001], 32768.0);
  EXPECT_EQ(t[2002], 65536.0);
}

// fp16 training of `tiny` with gradients poisoned (an inf) at chosen steps.
TEST(LossScaling, ForcedOverflowSkipsExactlyThatStepAndBacksOff) {
  using namespace ff;
  TrainConfig c = testkit::tiny_config(testkit::tiny_data_dir());
  c.steps = 10;
  c.precision = Precision::fp16;
  c.loss_scale = {1024.0f, 3, 1};  // hysteresis 1: every overflow halves, as GradScaler does
  const std::vector<int> poisoned = {3, 4, 8};
  std::vector<bool> inf(c.steps, false);
  for (int k : poisoned) inf[k - 1] = true;
  Trainer t(c, testkit::temp_dir("fp16"), nullptr);
  t.quiet = true;
  t.after_grads_reduced = [&](ModelState& s) {
    if (inf[t.step()]) {  // step() is the number of steps done: this is step step() + 1
      size_t n = 0;
      float* g = s.segment_grads(t.model().layout().head_segment(), &n);
      g[n / 2] = std::numeric_limits<float>::infinity();
    }
  };
  const auto want = grad_scaler_trajectory(inf, 1024.0, 3);
  for (int step = 1; step <= c.steps; ++step) {
    const std::vector<float> before = t.full_params();
    const StepRecord r = t.train_step();
    const std::vector<float> after = t.full_params();
    EXPECT_EQ(r.skipped, inf[step - 1]) << "step " << step;
    EXPECT_EQ(double(r.loss_scale), want[step - 1]) << "step " << step;
    EXPECT_EQ(before == after, inf[step - 1]) << "step " << step << ": parameters changed iff not skipped";
    EXPECT_TRUE(std::isfinite(r.loss));
    if (!r.skipped) {
      EXPECT_TRUE(std::isfinite(r.grad_norm) && r.grad_norm > 0);
    }
  }
  EXPECT_LT(t.history().back().loss, t.history().front().loss);
}

// Bad precision input is refused by validation (before any data is read), naming the key.
TEST(PrecisionConfig, BadValuesNameTheKey) {
  using namespace ff;
  auto refusal = [](const char* key, const char* value) {
    try {  // a name the key's table lacks is refused as the config is read, a bad number by validation
      validate_train_config(load_train_config(testkit::config_path("tiny.toml"), {{key, value}}));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("precision", "fp64").find("config key 'precision': unknown precision 'fp64'"), std::string::npos);
  EXPECT_NE(refusal("loss_scale_window", "0").find("loss_scale_window (0)"), std::string::npos);
  EXPECT_NE(refusal("loss_scale_init", "-1").find("loss_scale_init (-1)"), std::string::npos);
  EXPECT_EQ(refusal("precision", "bf16"), "accepted");
  EXPECT_EQ(load_train_config(testkit::config_path("tiny.toml"), {}).precision, Precision::fp32);  // the default
}

}  // namespace
