#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/simd.h"

namespace {

// exp_fast feeds softmax, cross-entropy and SwiGLU; its error budget is a few float ulps.
TEST(ExpFast, WithinTwoUlpsOverTheUsedRange) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.00137) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    const double got = ff::simd::exp_fast(xf);
    worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LT(worst, 2.5e-7);  // 2^-22 = 2.4e-7: two ulps
  EXPECT_EQ(ff::simd::exp_fast(0.0f), 1.0f);
  EXPECT_EQ(ff::simd::exp_fast(-INFINITY), 0.0f);
  EXPECT_EQ(ff::simd::exp_fast(-100.0f), 0.0f);
}

TEST(ExpFast, VectorFormMatchesScalarForm) {
  using ff::simd::kLanes;
  double worst = 0;
  for (int start = -1400; start < 1400; start += kLanes) {
    ff::simd::Vec<float> x;
    for (int i = 0; i < kLanes; ++i) x[i] = 0.0625f * static_cast<float>(start + i);
    const ff::simd::Vec<float> y = ff::simd::exp_vec<float>(x);
    for (int i = 0; i < kLanes; ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (x[i] < -87.3f) {
        EXPECT_EQ(y[i], 0.0f) << x[i];
      } else {
        worst = std::max(worst, std::abs(y[i] - want) / want);
      }
    }
  }
  EXPECT_LT(worst, 2.5e-7);
  ff::simd::Vec<float> masked{};
  masked[3] = -INFINITY;
  EXPECT_EQ(ff::simd::exp_vec<float>(masked)[3], 0.0f);
  EXPECT_EQ(ff::simd::exp_vec<float>(masked)[0], 1.0f);
}

}  // namespace
