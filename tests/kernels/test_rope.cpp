#include "check.h"
#include "kernels/rope.h"

namespace {

using fftest::randn;
using fftest::to_float;

constexpr int B = 2, T = 7, H = 3, D = 8;
constexpr int kStride = H * D + 5;  // rows wider than the rotated heads, as in a fused qkv row
constexpr double kTheta = 10000.0;

TEST(Rope, TablesMatchFormula) {
  std::vector<double> cos(T * D / 2), sin(T * D / 2);
  ff::rope_tables(cos.data(), sin.data(), T, D, kTheta);
  std::vector<float> cf(T * D / 2), sf(T * D / 2);
  ff::rope_tables(cf.data(), sf.data(), T, D, float(kTheta));
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < D / 2; ++i) {
      const double angle = t * std::pow(kTheta, -2.0 * i / D);
      EXPECT_NEAR(cos[t * D / 2 + i], std::cos(angle), 1e-14);
      EXPECT_NEAR(sin[t * D / 2 + i], std::sin(angle), 1e-14);
      EXPECT_NEAR(cf[t * D / 2 + i], std::cos(angle), 1e-6);
      EXPECT_NEAR(sf[t * D / 2 + i], std::sin(angle), 1e-6);
    }
  }
}

TEST(Rope, ForwardIsHfRotateHalf) {
  std::vector<double> cos(T * D / 2), sin(T * D / 2);
  ff::rope_tables(cos.data(), sin.data(), T, D, kTheta);
  const auto x0 = randn(B * T * kStride, 1);
  auto x = x0;
  ff::rope_forward(x.data(), cos.data(), sin.data(), B, T, H, D, kStride);
  for (int row = 0; row < B * T; ++row) {
    const int t = row % T;
    for (int h = 0; h < H; ++h) {
      const double* in = x0.data() + row * kStride + h * D;
      const double* got = x.data() + row * kStride + h * D;
      for (int i = 0; i < D; ++i) {
        // HF: x * cos(emb) + rotate_half(x) * sin(emb), emb = cat(freqs, freqs).
        const int f = i % (D / 2);
        const double rot = i < D / 2 ? -in[i + D / 2] : in[i - D / 2];
        EXPECT_NEAR(got[i], in[i] * cos[t * D / 2 + f] + rot * sin[t * D / 2 + f], 1e-14);
      }
    }
    for (int c = H * D; c < kStride; ++c) EXPECT_EQ(x[row * kStride + c], x0[row * kStride + c]);
  }
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  std::vector<double> cos(T * D / 2), sin(T * D / 2);
  ff::rope_tables(cos.data(), sin.data(), T, D, kTheta);
  auto x = randn(B * T * kStride, 2);
  const auto g = randn(B * T * kStride, 3);
  auto grad = g;
  ff::rope_backward(grad.data(), cos.data(), sin.data(), B, T, H, D, kStride);
  std::vector<double> y;
  auto loss = [&] {
    y = x;
    ff::rope_forward(y.data(), cos.data(), sin.data(), B, T, H, D, kStride);
    return fftest::dot(y, g);
  };
  fftest::expect_matches_fd(x, grad, loss, "dx");
}

TEST(Rope, FloatMatchesDouble) {
  std::vector<double> cos(T * D / 2), sin(T * D / 2);
  ff::rope_tables(cos.data(), sin.data(), T, D, kTheta);
  std::vector<float> cf(T * D / 2), sf(T * D / 2);
  ff::rope_tables(cf.data(), sf.data(), T, D, float(kTheta));
  auto x = randn(B * T * kStride, 4);
  auto xf = to_float(x);
  ff::rope_forward(x.data(), cos.data(), sin.data(), B, T, H, D, kStride);
  ff::rope_forward(xf.data(), cf.data(), sf.data(), B, T, H, D, kStride);
  EXPECT_LT(fftest::max_rel_err(xf, x), 2e-6);
  ff::rope_backward(x.data(), cos.data(), sin.data(), B, T, H, D, kStride);
  ff::rope_backward(xf.data(), cf.data(), sf.data(), B, T, H, D, kStride);
  EXPECT_LT(fftest::max_rel_err(xf, randn(B * T * kStride, 4)), 4e-6);  // a rotation and back
}

}  // namespace
