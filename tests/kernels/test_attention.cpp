#include "check.h"
#include "kernels/flash_attention.h"

namespace {

using fftest::randn;
using fftest::to_float;

// q, k and v live in one buffer, either interleaved per row as a fused qkv projection writes
// them, or as three separate blocks; both exercise the stride arguments.
struct Layout {
  ff::AttentionShape s;
  size_t q_off, k_off, v_off, size;
  const char* name;
};

Layout make(int B, int T, int H, int Hkv, int D, bool fused, const char* name) {
  Layout L;
  L.name = name;
  if (fused) {
    const int w = (H + 2 * Hkv) * D;
    L.s = {B, T, H, Hkv, D, w, w};
    L.q_off = 0;
    L.k_off = static_cast<size_t>(H) * D;
    L.v_off = static_cast<size_t>(H + Hkv) * D;
    L.size = static_cast<size_t>(B) * T * w;
  } else {
    L.s = {B, T, H, Hkv, D, H * D, Hkv * D};
    const size_t nq = static_cast<size_t>(B) * T * H * D,
                 nkv = static_cast<size_t>(B) * T * Hkv * D;
    L.q_off = 0;
    L.k_off = nq;
    L.v_off = nq + nkv;
    L.size = nq + 2 * nkv;
  }
  return L;
}

std::vector<Layout> cases() {
  return {
      make(2, 37, 4, 2, 16, true, "GQA, T=37 (one partial tile), D=16, fused qkv"),
      make(1, 130, 2, 1, 64, false, "MQA, T=130 (two full tiles + 2 rows), D=64, separate"),
      make(1, 70, 3, 3, 24, true, "MHA, T=70, D=24 (padded to 32), fused qkv"),
      make(1, 20, 2, 1, 80, false, "D=80: a 64-wide and a 16-wide output chunk"),
      make(2, 1, 2, 2, 16, false, "T=1: out = v, no gradient to q or k"),
  };
}

size_t out_size(const ff::AttentionShape& s) { return size_t(s.B) * s.T * s.H * s.D; }
size_t lse_size(const ff::AttentionShape& s) { return size_t(s.B) * s.H * s.T; }

// Materializes every score row: the textbook definition the tiled kernel must reproduce.
void naive_attention(const Layout& L, const std::vector<double>& x, std::vector<double>& out,
                     std::vector<double>& lse) {
  const auto& s = L.s;
  const double scale = 1 / std::sqrt(double(s.D));
  std::vector<double> p(s.T);
  for (int b = 0; b < s.B; ++b) {
    for (int h = 0; h < s.H; ++h) {
      const int g = h / (s.H / s.Hkv);
      for (int t = 0; t < s.T; ++t) {
        const double* q = &x[L.q_off + (size_t(b) * s.T + t) * s.q_stride + h * s.D];
        double mx = -INFINITY;
        for (int u = 0; u <= t; ++u) {
          const double* k = &x[L.k_off + (size_t(b) * s.T + u) * s.kv_stride + g * s.D];
          double dot = 0;
          for (int d = 0; d < s.D; ++d) dot += q[d] * k[d];
          p[u] = dot * scale;
          mx = std::max(mx, p[u]);
        }
        double sum = 0;
        for (int u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - mx));
        double* o = &out[((size_t(b) * s.T + t) * s.H + h) * s.D];
        for (int d = 0; d < s.D; ++d) o[d] = 0;
        for (int u = 0; u <= t; ++u) {
          const double* v = &x[L.v_off + (size_t(b) * s.T + u) * s.kv_stride + g * s.D];
          for (int d = 0; d < s.D; ++d) o[d] += p[u] / sum * v[d];
        }
        lse[(size_t(b) * s.H + h) * s.T + t] = mx + std::log(sum);
      }
    }
  }
}

template <class T>
void run_forward(const Layout& L, const std::vector<T>& x, std::vector<T>& out,
                 std::vector<T>& lse) {
  out.assign(out_size(L.s), T(0));
  lse.assign(lse_size(L.s), T(0));
  ff::attention_forward(out.data(), lse.data(), x.data() + L.q_off, x.data() + L.k_off,
                        x.data() + L.v_off, L.s);
}

template <class T>
void run_backward(const Layout& L, const std::vector<T>& x, const std::vector<T>& out,
                  const std::vector<T>& lse, const std::vector<T>& dout, std::vector<T>& grad) {
  ff::attention_backward(grad.data() + L.q_off, grad.data() + L.k_off, grad.data() + L.v_off,
                         dout.data(), x.data() + L.q_off, x.data() + L.k_off, x.data() + L.v_off,
                         out.data(), lse.data(), L.s);
}

TEST(FlashAttention, ForwardMatchesNaive) {
  for (const auto& L : cases()) {
    SCOPED_TRACE(L.name);
    const auto x = randn(L.size, 1);
    std::vector<double> want(out_size(L.s)), want_lse(lse_size(L.s)), out, lse;
    naive_attention(L, x, want, want_lse);
    run_forward(L, x, out, lse);
    EXPECT_LT(fftest::max_rel_err(out, want), 1e-13);
    EXPECT_LT(fftest::max_rel_err(lse, want_lse), 1e-13);
    std::vector<float> outf, lsef;
    run_forward(L, to_float(x), outf, lsef);
    EXPECT_LT(fftest::max_rel_err(outf, want), 3e-6);
    EXPECT_LT(fftest::max_rel_err(lsef, want_lse), 3e-6);
  }
}

TEST(FlashAttention, BackwardMatchesFiniteDifferences) {
  for (const auto& L : cases()) {
    SCOPED_TRACE(L.name);
    auto x = randn(L.size, 2);
    const auto dout = randn(out_size(L.s), 3);
    std::vector<double> out, lse, grad(L.size, 0.0);
    run_forward(L, x, out, lse);
    run_backward(L, x, out, lse, dout, grad);
    auto loss = [&] {
      run_forward(L, x, out, lse);
      return fftest::dot(out, dout);
    };
    fftest::expect_matches_fd(x, grad, loss, L.name, 120);
  }
}

TEST(FlashAttention, FloatBackwardMatchesDouble) {
  for (const auto& L : cases()) {
    SCOPED_TRACE(L.name);
    const auto x = randn(L.size, 4);
    const auto dout = randn(out_size(L.s), 5);
    std::vector<double> out, lse, grad(L.size, 0.0);
    run_forward(L, x, out, lse);
    run_backward(L, x, out, lse, dout, grad);
    const auto xf = to_float(x), doutf = to_float(dout);
    std::vector<float> outf, lsef, gradf(L.size, 0.0f);
    run_forward(L, xf, outf, lsef);
    run_backward(L, xf, outf, lsef, doutf, gradf);
    EXPECT_LT(fftest::max_rel_err(gradf, grad), 1e-5);
  }
}

// Gradients are added to what the buffers hold, and the result is bitwise the same across
// repeated runs and thread counts (every output element has one owner and a fixed order).
TEST(FlashAttention, BackwardAccumulatesDeterministically) {
  const auto L = cases()[0];
  const auto x = to_float(randn(L.size, 6)), dout = to_float(randn(out_size(L.s), 7));
  const auto start = to_float(randn(L.size, 8));
  std::vector<float> out, lse;
  run_forward(L, x, out, lse);
  auto run = [&](int threads) {
    const fftest::ScopedThreads scoped(threads);
    auto g = start;
    run_backward(L, x, out, lse, dout, g);
    return g;
  };
  const auto two = run(2);
  EXPECT_EQ(two, run(2));
  EXPECT_EQ(two, run(1));
  std::vector<float> fresh(L.size, 0.0f);
  run_backward(L, x, out, lse, dout, fresh);
  for (size_t i = 0; i < L.size; ++i) ASSERT_NEAR(two[i], start[i] + fresh[i], 1e-5) << i;
}

}  // namespace
