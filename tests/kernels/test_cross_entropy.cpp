#include "check.h"
#include "kernels/cross_entropy.h"

namespace {

using fftest::randn;
using fftest::to_float;

constexpr int N = 7, V = 53;
const std::vector<int32_t> kTargets = {0, 52, 17, 17, 3, 40, 8};

// -log softmax(x)[target], the textbook way in long double.
double naive_loss(const double* x, int target) {
  long double mx = x[0];
  for (int c = 1; c < V; ++c) mx = std::max<long double>(mx, x[c]);
  long double s = 0;
  for (int c = 0; c < V; ++c) s += std::exp(static_cast<long double>(x[c]) - mx);
  return static_cast<double>(std::log(s) + mx - x[target]);
}

TEST(CrossEntropy, LossMatchesNaiveLogSoftmax) {
  const auto logits = randn(N * V, 1, 4.0);
  std::vector<double> losses(N);
  const double total =
      ff::cross_entropy_forward(logits.data(), losses.data(), kTargets.data(), N, V);
  std::vector<float> lf(N);
  const auto xf = to_float(logits);
  const double total_f = ff::cross_entropy_forward(xf.data(), lf.data(), kTargets.data(), N, V);
  double want_total = 0;
  for (int n = 0; n < N; ++n) {
    const double want = naive_loss(logits.data() + n * V, kTargets[n]);
    want_total += want;
    EXPECT_NEAR(losses[n], want, 1e-13 * (1 + want));
    EXPECT_NEAR(lf[n], want, 2e-6 * (1 + want));
  }
  EXPECT_NEAR(total, want_total, 1e-12 * want_total);
  EXPECT_NEAR(total_f, want_total, 2e-6 * want_total);
}

TEST(CrossEntropy, FusedGradientMatchesFiniteDifferences) {
  auto logits = randn(N * V, 2, 4.0);
  const double scale = 1.0 / N;
  auto grad = logits;
  std::vector<double> losses(N);
  const double total =
      ff::cross_entropy_forward_backward(grad.data(), losses.data(), kTargets.data(), N, V, scale);
  std::vector<double> l2(N);
  EXPECT_NEAR(total, ff::cross_entropy_forward(logits.data(), l2.data(), kTargets.data(), N, V),
              1e-12 * total);
  auto loss = [&] {
    return scale * ff::cross_entropy_forward(logits.data(), l2.data(), kTargets.data(), N, V);
  };
  fftest::expect_matches_fd(logits, grad, loss, "dlogits");

  auto gf = to_float(logits);
  std::vector<float> lf(N);
  ff::cross_entropy_forward_backward(gf.data(), lf.data(), kTargets.data(), N, V, float(scale));
  EXPECT_LT(fftest::max_rel_err(gf, grad), 2e-6);
}

// Logits far from 0 must not overflow: only differences to the row max enter the exponential.
TEST(CrossEntropy, StableForLargeLogits) {
  auto logits = randn(N * V, 3, 4.0);
  for (auto& x : logits) x += 1000.0;
  const auto input = to_float(logits);
  auto xf = input;
  std::vector<float> lf(N);
  ff::cross_entropy_forward_backward(xf.data(), lf.data(), kTargets.data(), N, V, 1.0f);
  for (int n = 0; n < N; ++n) {
    // Exact loss of the float inputs the kernel actually saw.
    const std::vector<double> seen(input.begin() + n * V, input.begin() + (n + 1) * V);
    EXPECT_NEAR(lf[n], naive_loss(seen.data(), kTargets[n]), 1e-5);
    double row_sum = 0;
    for (int c = 0; c < V; ++c) row_sum += xf[n * V + c];
    EXPECT_NEAR(row_sum, 0.0, 1e-6);  // softmax sums to one, minus the one-hot
  }
}

}  // namespace
