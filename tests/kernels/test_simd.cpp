#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

// Both vector forms the kernels use: the 16-lane Vec (AVX-512's specialisation there) and the
// register-wide Reg the softmax steps take (8 lanes on AVX2).
template <class V>
void expect_vector_exp_matches_scalar() {
  constexpr int n = ff::simd::kLanesOf<V>;
  double worst = 0;
  for (int start = -1400; start < 1400; start += n) {
    V x;
    for (int i = 0; i < n; ++i) x[i] = 0.0625f * static_cast<float>(start + i);
    const V y = ff::simd::exp_vec(x);
    for (int i = 0; i < n; ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (x[i] < -87.3f) {
        EXPECT_EQ(y[i], 0.0f) << x[i];
      } else {
        worst = std::max(worst, std::abs(y[i] - want) / want);
      }
    }
  }
  EXPECT_LT(worst, 2.5e-7);
  V masked{};
  masked[3] = -INFINITY;
  EXPECT_EQ(ff::simd::exp_vec(masked)[3], 0.0f);
  EXPECT_EQ(ff::simd::exp_vec(masked)[0], 1.0f);
}

TEST(ExpFast, VectorFormMatchesScalarForm) {
  expect_vector_exp_matches_scalar<ff::simd::Vec<float>>();
  expect_vector_exp_matches_scalar<ff::simd::Reg<float>>();
}

// transpose16 goes through sub-blocks of the register's lane count (16 with AVX-512, 8 floats or
// 4 doubles on AVX2), each to its mirrored place: every element must land at (c, r).
template <class T>
void expect_transpose16_transposes() {
  constexpr int lds = 19, ldd = 23;  // strides that are not the block's width
  std::vector<T> src(16 * lds), dst(16 * ldd, T(-1));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < lds; ++c) src[r * lds + c] = T(1000 * r + c);
  ff::simd::transpose16(src.data(), lds, dst.data(), ldd);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < ldd; ++c) {
      if (c < 16)
        EXPECT_EQ(dst[r * ldd + c], T(1000 * c + r)) << "dst row " << r << ", column " << c;
      else
        EXPECT_EQ(dst[r * ldd + c], T(-1)) << "written past the block: row " << r << ", column " << c;
    }
}

TEST(Transpose16, EveryElementLandsAtItsMirror) {
  expect_transpose16_transposes<float>();
  expect_transpose16_transposes<double>();
  expect_transpose16_transposes<uint32_t>();
}

}  // namespace
