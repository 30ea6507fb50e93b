// fp8 emulation against grids built independently: every one of the 256 codes of each format
// decoded from its bits, the expected rounding being the nearest grid value with ties to the
// code whose mantissa is even, saturating at the largest finite value. Delayed scaling against
// the recipe written out: scale_k = fp8_max / max(amax of the previous `history` steps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <vector>

#include "kernels/fp8.h"

namespace {

struct GridPoint {
  double value;
  int mantissa;
};

// The finite, non-negative values of a format, from the bit layout alone.
std::vector<GridPoint> grid(ff::Fp8Format f) {
  const bool e4m3 = f == ff::Fp8Format::e4m3;
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emax_code = e4m3 ? 15 : 31;
  std::vector<GridPoint> g;
  for (int code = 0; code < 128; ++code) {  // sign bit clear
    const int E = code >> mbits, M = code & ((1 << mbits) - 1);
    if (e4m3 && E == emax_code && M == (1 << mbits) - 1) continue;  // e4m3's only NaN
    if (!e4m3 && E == emax_code) continue;                          // e5m2's inf and NaNs
    const double frac = double(M) / (1 << mbits);
    const double v = E == 0 ? frac * std::ldexp(1.0, 1 - bias) : (1 + frac) * std::ldexp(1.0, E - bias);
    g.push_back({v, M});
  }
  std::sort(g.begin(), g.end(), [](const GridPoint& a, const GridPoint& b) { return a.value < b.value; });
  return g;
}

double expected(const std::vector<GridPoint>& g, double x) {
  const double a = std::fabs(x);
  if (a >= g.back().value) return std::copysign(g.back().value, x);
  auto hi = std::lower_bound(g.begin(), g.end(), a, [](const GridPoint& p, double v) { return p.value < v; });
  if (hi->value == a) return std::copysign(a, x);
  auto lo = hi - 1;
  const double dlo = a - lo->value, dhi = hi->value - a;
  const GridPoint& pick = dlo < dhi ? *lo : dhi < dlo ? *hi : (lo->mantissa % 2 == 0 ? *lo : *hi);
  return std::copysign(pick.value, x);
}

void check_format(ff::Fp8Format f, double max_expected, size_t count_expected) {
  const auto g = grid(f);
  ASSERT_EQ(g.size(), count_expected);
  EXPECT_EQ(g.back().value, max_expected);
  EXPECT_EQ(ff::fp8_max(f), float(max_expected));
  std::vector<double> xs;
  for (size_t i = 0; i < g.size(); ++i) {
    xs.push_back(g[i].value);
    if (i + 1 < g.size()) {
      const double mid = 0.5 * (g[i].value + g[i + 1].value);  // ties (exact in float)
      xs.insert(xs.end(), {mid, mid * (1 + 1e-6), mid * (1 - 1e-6)});
    }
  }
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> expo(-20, 17);
  for (int i = 0; i < 20000; ++i) xs.push_back(std::exp2(expo(gen)));
  xs.insert(xs.end(), {0.0, 1e-30, 1e6, 3.4e38, max_expected * 1.03});
  for (double x : xs)
    for (double s : {1.0, -1.0}) {
      const float in = float(s * x);
      ASSERT_EQ(double(ff::round_to_fp8(in, f)), expected(g, double(in))) << "x = " << in;
    }
  EXPECT_TRUE(std::isnan(ff::round_to_fp8(NAN, f)));
}

TEST(Fp8, E4m3RoundsToTheIndependentGrid) { check_format(ff::Fp8Format::e4m3, 448.0, 127); }
TEST(Fp8, E5m2RoundsToTheIndependentGrid) { check_format(ff::Fp8Format::e5m2, 57344.0, 124); }

TEST(Fp8, FakeQuantiseScalesRoundsAndScalesBack) {
  std::vector<float> x = {0.1f, -3.0f, 1000.0f, 1e-5f};
  const float scale = 4.0f;
  const auto want = [&](float v) { return ff::round_to_fp8(v * scale, ff::Fp8Format::e4m3) / scale; };
  std::vector<float> w;
  for (float v : x) w.push_back(want(v));
  EXPECT_EQ(ff::fake_quantise_fp8(x.data(), x.size(), scale, ff::Fp8Format::e4m3), 1000.0f);
  EXPECT_EQ(x, w);
  EXPECT_EQ(x[2], 448.0f / 4.0f);  // saturated
}

TEST(Fp8, DelayedScalingFollowsTheAmaxHistory) {
  for (int history : {4, 1024}) {
    ff::Fp8DelayedScale s(ff::Fp8Format::e4m3, history);
    std::deque<double> window;  // the recipe: the last `history` amaxes
    double scale = 1.0;         // before any amax
    std::mt19937_64 gen(history);
    std::uniform_real_distribution<double> u(0.5, 4);
    for (int step = 0; step < 1100; ++step) {
      ASSERT_EQ(double(s.scale()), float(scale)) << "history " << history << " step " << step;
      const float amax = step == 3 ? 1000.0f : float(u(gen));  // one outlier that must age out
      std::vector<float> x = {amax, -amax / 3};
      s.quantise(x.data(), x.size());
      window.push_back(amax);
      if (int(window.size()) > history) window.pop_front();
      scale = double(448.0f / float(*std::max_element(window.begin(), window.end())));
    }
  }
}

}  // namespace
