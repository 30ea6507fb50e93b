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

// Llama 3.1's published rule, written out here in double: wavelength = 2 pi / f; shorter than
// original / high_freq_factor: kept; longer than original / low_freq_factor: f / factor; between:
// smooth = (original / wavelength - low) / (high - low), f' = (1 - smooth) f / factor + smooth f.
// At D = 16, theta 1e4 the wavelengths are 6.3, 19.9, 62.8, 199, ...: against 64 / 4 = 16 and
// 64 / 1 = 64, pair 0 is kept, pairs 1 and 2 are interpolated and the rest divided.
TEST(Rope, ScaledInverseFrequenciesMatchTheFormulas) {
  constexpr int kD = 16;
  constexpr double kFactor = 8, kLow = 1, kHigh = 4, kOriginal = 64;
  const ff::RopeScaling llama3{ff::RopeScalingKind::llama3, float(kFactor), float(kLow), float(kHigh), int(kOriginal)};
  const ff::RopeScaling linear{ff::RopeScalingKind::linear, 2.5f};
  std::vector<double> d3(kD / 2), dl(kD / 2), dn(kD / 2);
  std::vector<float> f3(kD / 2), fl(kD / 2);
  ff::rope_inverse_frequencies(d3.data(), kD, kTheta, llama3);
  ff::rope_inverse_frequencies(dl.data(), kD, kTheta, linear);
  ff::rope_inverse_frequencies(dn.data(), kD, kTheta);
  ff::rope_inverse_frequencies(f3.data(), kD, float(kTheta), llama3);
  ff::rope_inverse_frequencies(fl.data(), kD, float(kTheta), linear);
  int kept = 0, ramped = 0, divided = 0;
  for (int i = 0; i < kD / 2; ++i) {
    const double f = 1.0 / std::pow(kTheta, 2.0 * i / kD), wavelength = 2 * M_PI / f;
    double want = f / kFactor;
    if (wavelength < kOriginal / kHigh) want = f, ++kept;
    else if (wavelength > kOriginal / kLow) ++divided;
    else {
      const double smooth = (kOriginal / wavelength - kLow) / (kHigh - kLow);
      want = (1 - smooth) * f / kFactor + smooth * f, ++ramped;
    }
    EXPECT_NEAR(dn[i], f, 1e-15 * f) << i;
    EXPECT_NEAR(d3[i], want, 1e-13 * want) << "llama3 pair " << i;
    EXPECT_NEAR(f3[i], want, 1e-6 * want) << "llama3 pair " << i;
    EXPECT_NEAR(dl[i], f / 2.5, 1e-13 * f) << "linear pair " << i;
    EXPECT_NEAR(fl[i], f / 2.5, 1e-6 * f) << "linear pair " << i;
  }
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(ramped, 2);
  EXPECT_EQ(divided, kD / 2 - 3);
}

// The tables are the angles t * inv_freq of the scaled frequencies.
TEST(Rope, ScaledTablesUseTheScaledFrequencies) {
  const ff::RopeScaling llama3{ff::RopeScalingKind::llama3, 8.0f, 1.0f, 4.0f, 64};
  std::vector<double> inv(D / 2), cos(T * D / 2), sin(T * D / 2);
  ff::rope_inverse_frequencies(inv.data(), D, kTheta, llama3);
  ff::rope_tables(cos.data(), sin.data(), T, D, kTheta, llama3);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < D / 2; ++i) {
      EXPECT_NEAR(cos[t * D / 2 + i], std::cos(t * inv[i]), 1e-14);
      EXPECT_NEAR(sin[t * D / 2 + i], std::sin(t * inv[i]), 1e-14);
    }
}

}  // namespace
