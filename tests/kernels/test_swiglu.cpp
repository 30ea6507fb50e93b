#include "check.h"
#include "kernels/swiglu.h"

namespace {

using fftest::randn;
using fftest::to_float;

constexpr int N = 6, F = 37;

TEST(SwiGlu, ForwardMatchesFormula) {
  const auto gu = randn(N * 2 * F, 1, 3.0);
  std::vector<double> h(N * F);
  ff::swiglu_forward(h.data(), gu.data(), N, F);
  for (int n = 0; n < N; ++n) {
    for (int i = 0; i < F; ++i) {
      const double g = gu[n * 2 * F + i], u = gu[n * 2 * F + F + i];
      EXPECT_NEAR(h[n * F + i], g / (1 + std::exp(-g)) * u, 1e-14);
    }
  }
  const auto guf = to_float(gu);
  std::vector<float> hf(N * F);
  ff::swiglu_forward(hf.data(), guf.data(), N, F);
  EXPECT_LT(fftest::max_rel_err(hf, h), 1e-6);
}

TEST(SwiGlu, BackwardMatchesFiniteDifferences) {
  auto gu = randn(N * 2 * F, 2, 3.0);
  const auto dh = randn(N * F, 3);
  // Overwrite semantics: garbage in the output must not leak into the result.
  std::vector<double> grad(N * 2 * F, 1e30), h(N * F);
  ff::swiglu_backward(grad.data(), dh.data(), gu.data(), N, F);
  auto loss = [&] {
    ff::swiglu_forward(h.data(), gu.data(), N, F);
    return fftest::dot(h, dh);
  };
  fftest::expect_matches_fd(gu, grad, loss, "d_gate_up");

  const auto guf = to_float(gu), dhf = to_float(dh);
  std::vector<float> gradf(N * 2 * F, 1e30f);
  ff::swiglu_backward(gradf.data(), dhf.data(), guf.data(), N, F);
  EXPECT_LT(fftest::max_rel_err(gradf, grad), 2e-6);
}

TEST(SwiGlu, SaturatesWithoutNaN) {
  std::vector<float> gu = {-200.0f, 200.0f, -90.0f, 90.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<float> h(4), grad(8);
  const std::vector<float> dh(4, 1.0f);
  ff::swiglu_forward(h.data(), gu.data(), 1, 4);
  ff::swiglu_backward(grad.data(), dh.data(), gu.data(), 1, 4);
  EXPECT_NEAR(h[0], 0.0f, 1e-30);
  EXPECT_FLOAT_EQ(h[1], 200.0f);
  EXPECT_NEAR(h[2], 0.0f, 1e-30);
  EXPECT_FLOAT_EQ(h[3], 90.0f);
  for (float v : grad) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
