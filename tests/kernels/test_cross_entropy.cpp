#include <cstring>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/cross_entropy.h"
#include "kernels/vocab_parallel.h"

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

// ---- ignored targets (-1): no loss, no gradient; the other rows as without them ----

const std::vector<int32_t> kMaskedTargets = {0, -1, 17, -1, 3, 40, -1};

// The masked rows' expected loss and gradient, in long double straight from the definition:
// loss = -log softmax(x)[t], d/dx = scale * (softmax(x) - onehot(t)); both 0 when t == -1.
struct MaskedExpectation {
  std::vector<double> losses, grad;
  double total = 0;
};
MaskedExpectation expect_masked(const std::vector<double>& logits, double scale) {
  MaskedExpectation e{std::vector<double>(N, 0.0), std::vector<double>(size_t(N) * V, 0.0), 0.0};
  for (int n = 0; n < N; ++n) {
    const int t = kMaskedTargets[size_t(n)];
    if (t == -1) continue;
    const double* x = logits.data() + size_t(n) * V;
    long double mx = x[0], s = 0;
    for (int c = 1; c < V; ++c) mx = std::max<long double>(mx, x[c]);
    for (int c = 0; c < V; ++c) s += std::exp(static_cast<long double>(x[c]) - mx);
    e.losses[size_t(n)] = static_cast<double>(std::log(s) + mx - x[t]);
    e.total += e.losses[size_t(n)];
    for (int c = 0; c < V; ++c)
      e.grad[size_t(n) * V + c] =
          static_cast<double>(scale * (std::exp(static_cast<long double>(x[c]) - mx) / s - (c == t ? 1.0L : 0.0L)));
  }
  return e;
}

void expect_rows_zero(const float* g, int n, const char* what) {
  for (int c = 0; c < V; ++c) ASSERT_EQ(g[size_t(n) * V + c], 0.0f) << what << " row " << n << " column " << c;
}

TEST(CrossEntropy, IgnoredTargetsHaveNoLossAndNoGradient) {
  const auto logits = randn(size_t(N) * V, 5, 4.0);
  const double scale = 1.0 / 4;  // 1 / (the number of loss targets)
  const MaskedExpectation want = expect_masked(logits, scale);

  // Double: loss only, and fused with the gradient.
  std::vector<double> ld(N), gd = logits;
  EXPECT_NEAR(ff::cross_entropy_forward(logits.data(), ld.data(), kMaskedTargets.data(), N, V), want.total,
              1e-12 * want.total);
  const double total_d =
      ff::cross_entropy_forward_backward(gd.data(), ld.data(), kMaskedTargets.data(), N, V, scale);
  EXPECT_NEAR(total_d, want.total, 1e-12 * want.total);
  for (int n = 0; n < N; ++n) EXPECT_NEAR(ld[size_t(n)], want.losses[size_t(n)], 1e-12 * (1 + want.losses[size_t(n)]));
  for (size_t i = 0; i < gd.size(); ++i) ASSERT_NEAR(gd[i], want.grad[i], 1e-13) << "double gradient " << i;

  // Float: loss only, fused, and fused with the gradient also rounded to 16 bits.
  const auto xf = to_float(logits);
  std::vector<float> lf(N), gf = xf;
  EXPECT_NEAR(ff::cross_entropy_forward(xf.data(), lf.data(), kMaskedTargets.data(), N, V), want.total,
              2e-6 * want.total);
  const double total_f =
      ff::cross_entropy_forward_backward(gf.data(), lf.data(), kMaskedTargets.data(), N, V, float(scale));
  EXPECT_NEAR(total_f, want.total, 2e-6 * want.total);
  for (int n = 0; n < N; ++n) EXPECT_NEAR(lf[size_t(n)], want.losses[size_t(n)], 2e-6 * (1 + want.losses[size_t(n)]));
  EXPECT_LT(fftest::max_rel_err(gf, want.grad), 2e-6);
  for (int n = 0; n < N; ++n)
    if (kMaskedTargets[size_t(n)] == -1) expect_rows_zero(gf.data(), n, "float");
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<float> g2 = xf, l2(N);
    std::vector<uint16_t> rounded(size_t(N) * V, 0xFFFF), want_bits(size_t(N) * V);
    ff::cross_entropy_forward_backward(g2.data(), l2.data(), kMaskedTargets.data(), N, V, float(scale),
                                       ff::TypedPtr(rounded.data(), t));
    EXPECT_EQ(std::memcmp(g2.data(), gf.data(), gf.size() * 4), 0) << ff::dtype_name(t);
    ff::convert_from_f32(ff::TypedPtr(want_bits.data(), t), gf.data(), gf.size());
    EXPECT_EQ(rounded, want_bits) << ff::dtype_name(t);  // the ignored rows' zeros too
  }
}

// The vocab-parallel loss over two column slices, its two reductions done here by hand.
TEST(CrossEntropy, VocabParallelIgnoresTargetsLikeTheWholeRow) {
  const auto logits = randn(size_t(N) * V, 6, 4.0);
  const double scale = 1.0 / 4;
  const MaskedExpectation want = expect_masked(logits, scale);
  const int split = 20, widths[2] = {split, V - split}, firsts[2] = {0, split};
  std::vector<float> slices[2], row_max[2], partials[2];
  for (int r = 0; r < 2; ++r) {
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < widths[r]; ++c) slices[r].push_back(float(logits[size_t(n) * V + firsts[r] + c]));
    row_max[r].resize(N), partials[r].resize(2 * size_t(N));
    ff::vocab_slice_row_max(slices[r].data(), row_max[r].data(), N, widths[r]);
  }
  std::vector<float> global_max(N), global_partials(2 * size_t(N));
  for (int n = 0; n < N; ++n) global_max[size_t(n)] = std::max(row_max[0][size_t(n)], row_max[1][size_t(n)]);
  for (int r = 0; r < 2; ++r)
    ff::vocab_slice_partials(slices[r].data(), global_max.data(), kMaskedTargets.data(), N, widths[r], firsts[r],
                             true, partials[r].data());
  for (size_t i = 0; i < global_partials.size(); ++i) global_partials[i] = partials[0][i] + partials[1][i];
  for (int r = 0; r < 2; ++r) {
    std::vector<float> losses(N);
    const double total = ff::vocab_slice_finish(slices[r].data(), global_max.data(), global_partials.data(),
                                                kMaskedTargets.data(), N, widths[r], firsts[r], true, float(scale),
                                                losses.data());
    EXPECT_NEAR(total, want.total, 2e-6 * want.total) << "slice " << r;
    for (int n = 0; n < N; ++n) {
      EXPECT_NEAR(losses[size_t(n)], want.losses[size_t(n)], 2e-6 * (1 + want.losses[size_t(n)])) << n;
      for (int c = 0; c < widths[r]; ++c) {
        const float got = slices[r][size_t(n) * widths[r] + c];
        const double expect = want.grad[size_t(n) * V + firsts[r] + c];
        if (kMaskedTargets[size_t(n)] == -1) ASSERT_EQ(got, 0.0f) << "ignored row " << n;
        else ASSERT_NEAR(got, expect, 2e-6 * (std::abs(expect) + 1e-3)) << "row " << n << " column " << c;
      }
    }
  }
}

}  // namespace
