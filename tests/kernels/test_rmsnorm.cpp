#include "check.h"
#include "kernels/rmsnorm.h"

namespace {

using fftest::randn;
using fftest::to_float;

constexpr int N = 5, C = 70;  // C spans two of the 64-column dw blocks
constexpr double kEps = 1e-5;

struct Case {
  std::vector<double> x = randn(N * C, 1), w = randn(C, 2, 0.5), g = randn(N * C, 3);
};

TEST(RmsNorm, ForwardMatchesFormula) {
  Case c;
  std::vector<double> y(N * C), rstd(N);
  ff::rmsnorm_forward(y.data(), rstd.data(), c.x.data(), c.w.data(), N, C, kEps);
  for (int n = 0; n < N; ++n) {
    double ss = 0;
    for (int i = 0; i < C; ++i) ss += c.x[n * C + i] * c.x[n * C + i];
    const double r = 1 / std::sqrt(ss / C + kEps);
    EXPECT_NEAR(rstd[n], r, 1e-12 * r);
    for (int i = 0; i < C; ++i) EXPECT_NEAR(y[n * C + i], c.x[n * C + i] * r * c.w[i], 1e-12);
  }
  std::vector<float> yf(N * C), rf(N);
  const auto xf = to_float(c.x), wf = to_float(c.w);
  ff::rmsnorm_forward(yf.data(), rf.data(), xf.data(), wf.data(), N, C, float(kEps));
  EXPECT_LT(fftest::max_rel_err(yf, y), 1e-6);
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  Case c;
  std::vector<double> y(N * C), rstd(N), dx(N * C, 0.0), dw(C, 0.0);
  ff::rmsnorm_forward(y.data(), rstd.data(), c.x.data(), c.w.data(), N, C, kEps);
  ff::rmsnorm_backward(dx.data(), dw.data(), c.g.data(), c.x.data(), c.w.data(), rstd.data(), N, C);
  auto loss = [&] {
    ff::rmsnorm_forward(y.data(), rstd.data(), c.x.data(), c.w.data(), N, C, kEps);
    return fftest::dot(y, c.g);
  };
  fftest::expect_matches_fd(c.x, dx, loss, "dx");
  fftest::expect_matches_fd(c.w, dw, loss, "dw");
}

TEST(RmsNorm, FloatBackwardMatchesDoubleAndAccumulates) {
  Case c;
  const auto dx0 = randn(N * C, 4), dw0 = randn(C, 5);
  std::vector<double> y(N * C), rstd(N), dx = dx0, dw = dw0;
  ff::rmsnorm_forward(y.data(), rstd.data(), c.x.data(), c.w.data(), N, C, kEps);
  ff::rmsnorm_backward(dx.data(), dw.data(), c.g.data(), c.x.data(), c.w.data(), rstd.data(), N, C);
  const auto xf = to_float(c.x), wf = to_float(c.w), gf = to_float(c.g);
  std::vector<float> yf(N * C), rf(N), dxf = to_float(dx0), dwf = to_float(dw0);
  ff::rmsnorm_forward(yf.data(), rf.data(), xf.data(), wf.data(), N, C, float(kEps));
  ff::rmsnorm_backward(dxf.data(), dwf.data(), gf.data(), xf.data(), wf.data(), rf.data(), N, C);
  EXPECT_LT(fftest::max_rel_err(dxf, dx), 1e-5);
  EXPECT_LT(fftest::max_rel_err(dwf, dw), 1e-5);
  // Accumulation: the prefilled values must still be in there.
  std::vector<double> dx_fresh(N * C, 0.0), dw_fresh(C, 0.0);
  ff::rmsnorm_backward(dx_fresh.data(), dw_fresh.data(), c.g.data(), c.x.data(), c.w.data(),
                       rstd.data(), N, C);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(dx[i], dx0[i] + dx_fresh[i], 1e-12);
  for (int i = 0; i < C; ++i) EXPECT_NEAR(dw[i], dw0[i] + dw_fresh[i], 1e-12);
}

TEST(RmsNorm, ThreadCountDoesNotChangeBits) {
  const int n = 96, cc = 200;
  const auto x = to_float(randn(n * cc, 6)), w = to_float(randn(cc, 7)),
             g = to_float(randn(n * cc, 8));
  auto run = [&](int threads) {
    const fftest::ScopedThreads scoped(threads);
    std::vector<float> y(n * cc), r(n), dx(n * cc, 0.0f), dw(cc, 0.0f);
    ff::rmsnorm_forward(y.data(), r.data(), x.data(), w.data(), n, cc, 1e-5f);
    ff::rmsnorm_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(), r.data(), n, cc);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dw.begin(), dw.end());
    return y;
  };
  EXPECT_EQ(run(1), run(2));
}

}  // namespace
