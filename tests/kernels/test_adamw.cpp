#include <cstring>

#include "check.h"
#include "kernels/adamw.h"

namespace {

using fftest::randn;
using fftest::to_float;

// torch.optim.AdamW, written out for one element in double.
struct Ref {
  double p, m = 0, v = 0;
  double m_mag = 0;  // m with |g|: float rounding in m is relative to this, not to a cancelled m
  void step(double g, const ff::AdamWHyper& h, bool decay) {
    if (decay) p *= 1 - double(h.lr) * h.weight_decay;
    m = h.beta1 * m + (1 - double(h.beta1)) * g;
    m_mag = h.beta1 * m_mag + (1 - double(h.beta1)) * std::abs(g);
    v = h.beta2 * v + (1 - double(h.beta2)) * g * g;
    const double bc1 = 1 - std::pow(double(h.beta1), h.step);
    const double bc2 = 1 - std::pow(double(h.beta2), h.step);
    p -= h.lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + h.eps);
  }
};

TEST(AdamW, ThreeStepsMatchTheFormula) {
  const size_t n = 1000;
  for (bool decay : {true, false}) {
    auto p = to_float(randn(n, 1));
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    std::vector<Ref> ref;
    for (float x : p) ref.push_back({x});
    ff::AdamWHyper h{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0};
    for (int s = 1; s <= 3; ++s) {
      h.step = s;
      const auto g = to_float(randn(n, 10 + s, 0.01 * s));
      ff::adamw_update(p.data(), g.data(), m.data(), v.data(), n, h, decay);
      for (size_t i = 0; i < n; ++i) ref[i].step(g[i], h, decay);
    }
    for (size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(p[i], ref[i].p, 1e-6 * (1 + std::abs(ref[i].p))) << "decay=" << decay << " " << i;
      ASSERT_NEAR(m[i], ref[i].m, 1e-6 * ref[i].m_mag) << i;
      ASSERT_NEAR(v[i], ref[i].v, 1e-6 * ref[i].v) << i;
    }
  }
}

// A hand-worked first step: m = 0.1 g, v = 0.05 g^2, the bias corrections undo both factors, so
// the update is lr * g / (|g| + eps) = lr * sign(g), after the decay p (1 - lr wd).
TEST(AdamW, FirstStepIsSignTimesLr) {
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, -3.0f}, m(2, 0.0f), v(2, 0.0f);
  const ff::AdamWHyper h{0.01f, 0.9f, 0.95f, 0.0f, 0.5f, 1};
  ff::adamw_update(p.data(), g.data(), m.data(), v.data(), 2, h, true);
  EXPECT_NEAR(p[0], 1.0 * (1 - 0.005) - 0.01, 1e-6);
  EXPECT_NEAR(p[1], -2.0 * (1 - 0.005) + 0.01, 1e-6);
  EXPECT_NEAR(m[0], 0.05, 1e-7);
  EXPECT_NEAR(v[1], 0.05 * 9.0, 1e-6);
}

// The kernel is vectorised (kernels/adamw.cpp); this scalar loop is the form it replaced, with the
// three fused multiply-adds the compiler formed there written out. Both must agree bitwise, on
// lengths with a vector remainder and on spans that start off a vector boundary, so that fp32
// training keeps its bits.
TEST(AdamW, VectorisedIsBitwiseTheScalarLoop) {
  for (size_t n : {size_t(1), size_t(15), size_t(1000), size_t(70001)})
    for (size_t at : {size_t(0), size_t(3)})
      for (bool decay : {true, false}) {
        const auto p0 = to_float(randn(n + at, 61));
        auto p = p0, pr = p0;
        std::vector<float> m(n + at, 0.0f), v(n + at, 0.0f), mr = m, vr = v;
        ff::AdamWHyper h{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0};
        for (int s = 1; s <= 3; ++s) {
          h.step = s;
          const auto g = to_float(randn(n + at, 70 + s, 0.02 * s));
          ff::adamw_update(p.data() + at, g.data() + at, m.data() + at, v.data() + at, n, h, decay);
          const double bc1 = 1.0 - std::pow(double(h.beta1), h.step);
          const double bc2 = 1.0 - std::pow(double(h.beta2), h.step);
          const float shrink = decay ? float(1.0 - double(h.lr) * h.weight_decay) : 1.0f;
          const float omb1 = float(1.0 - h.beta1), omb2 = float(1.0 - h.beta2);
          const float step_size = float(h.lr / bc1), bc2_sqrt = float(std::sqrt(bc2));
          for (size_t i = at; i < n + at; ++i) {
            const float pi = pr[i] * shrink;
            const float mi = std::fma(mr[i], h.beta1, omb1 * g[i]);
            const float vi = std::fma(vr[i], h.beta2, (omb2 * g[i]) * g[i]);
            const float denom = std::sqrt(vi) / bc2_sqrt + h.eps;
            mr[i] = mi, vr[i] = vi;
            pr[i] = std::fma(-(mi / denom), step_size, pi);
          }
        }
        ASSERT_EQ(std::memcmp(p.data(), pr.data(), p.size() * sizeof(float)), 0) << n << " " << at;
        ASSERT_EQ(std::memcmp(m.data(), mr.data(), m.size() * sizeof(float)), 0) << n << " " << at;
        ASSERT_EQ(std::memcmp(v.data(), vr.data(), v.size() * sizeof(float)), 0) << n << " " << at;
      }
}

TEST(L2Norm, MatchesNaiveAndIgnoresThreadCount) {
  for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(3'000'001)}) {
    const auto x = to_float(randn(n, 5));
    double want = 0;
    for (float f : x) want += double(f) * f;
    want = std::sqrt(want);
    const double got = ff::l2_norm(x.data(), n);
    EXPECT_NEAR(got, want, 1e-12 * (1 + want)) << n;
    const fftest::ScopedThreads scoped(1);
    const double one = ff::l2_norm(x.data(), n);
    EXPECT_EQ(one, got) << n;
  }
}

TEST(ScaleInplace, Scales) {
  auto x = to_float(randn(777, 6));
  const auto x0 = x;
  ff::scale_inplace(x.data(), x.size(), 0.25f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], x0[i] * 0.25f);
}

}  // namespace
