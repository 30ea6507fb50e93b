#include <omp.h>

#include <cstring>

#include "check.h"
#include "kernels/gemm.h"

namespace {

using fftest::randn;
using fftest::to_float;

// op(X)(i, j) of a row-major stored matrix with row stride ld.
double at(const std::vector<float>& X, bool trans, int ld, int i, int j) {
  return trans ? X[static_cast<size_t>(j) * ld + i] : X[static_cast<size_t>(i) * ld + j];
}

TEST(Gemm, AllTransposesMatchNaiveDouble) {
  const int M = 37, N = 29, K = 53;
  const float alpha = 0.7f, beta = 0.3f;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      // Padded leading dimensions so a mix-up of ld and the logical size shows.
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
      const auto A = to_float(randn(static_cast<size_t>(ta ? K : M) * lda, 1));
      const auto B = to_float(randn(static_cast<size_t>(tb ? N : K) * ldb, 2));
      auto C = to_float(randn(static_cast<size_t>(M) * ldc, 3));
      const auto C0 = C;
      ff::gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          double s = 0, mag = 0;
          for (int p = 0; p < K; ++p) {
            s += at(A, ta, lda, i, p) * at(B, tb, ldb, p, j);
            mag += std::abs(at(A, ta, lda, i, p) * at(B, tb, ldb, p, j));
          }
          const double want = alpha * s + beta * C0[static_cast<size_t>(i) * ldc + j];
          ASSERT_NEAR(C[static_cast<size_t>(i) * ldc + j], want, 1e-6 * (mag + 1))
              << "ta=" << ta << " tb=" << tb << " i=" << i << " j=" << j;
        }
        // The padding columns of C must be left alone.
        for (int j = N; j < ldc; ++j)
          ASSERT_EQ(C[static_cast<size_t>(i) * ldc + j], C0[static_cast<size_t>(i) * ldc + j]);
      }
    }
  }
}

struct LinearCase {
  int N, in, out;
  std::vector<float> x, W, dy;
  LinearCase(int n, int i, int o)
      : N(n),
        in(i),
        out(o),
        x(to_float(randn(static_cast<size_t>(N) * in, 11))),
        W(to_float(randn(static_cast<size_t>(out) * in, 12, 0.2))),
        dy(to_float(randn(static_cast<size_t>(N) * out, 13))) {}
};

// out >= 4 in takes the swapped-product path for dW under oneDNN, in whole 16 x 16 transpose
// blocks and with ragged edges.
const LinearCase kLinearCases[] = {{13, 24, 17}, {29, 16, 64}, {7, 5, 37}};

TEST(Linear, ForwardMatchesNaiveAndAccumulates) {
  const LinearCase& c = kLinearCases[0];
  std::vector<float> y(static_cast<size_t>(c.N) * c.out, 123.0f);
  ff::linear_forward(y.data(), c.x.data(), c.W.data(), c.N, c.in, c.out);
  auto y2 = y;
  ff::linear_forward(y2.data(), c.x.data(), c.W.data(), c.N, c.in, c.out, true);
  for (int n = 0; n < c.N; ++n) {
    for (int o = 0; o < c.out; ++o) {
      double s = 0;
      for (int i = 0; i < c.in; ++i) s += double(c.x[n * c.in + i]) * c.W[o * c.in + i];
      EXPECT_NEAR(y[n * c.out + o], s, 1e-5);
      EXPECT_NEAR(y2[n * c.out + o], 2 * s, 2e-5);
    }
  }
}

TEST(Linear, BackwardMatchesNaiveAndAccumulates) {
  for (const LinearCase& c : kLinearCases) {
    SCOPED_TRACE(c.out);
    const auto dx0 = to_float(randn(static_cast<size_t>(c.N) * c.in, 14));
    const auto dW0 = to_float(randn(static_cast<size_t>(c.out) * c.in, 15));
    auto dx = dx0, dW = dW0;
    ff::linear_backward(dx.data(), dW.data(), c.dy.data(), c.x.data(), c.W.data(), c.N, c.in,
                        c.out);
    for (int n = 0; n < c.N; ++n) {
      for (int i = 0; i < c.in; ++i) {
        double s = dx0[n * c.in + i];
        for (int o = 0; o < c.out; ++o) s += double(c.dy[n * c.out + o]) * c.W[o * c.in + i];
        EXPECT_NEAR(dx[n * c.in + i], s, 1e-5);
      }
    }
    for (int o = 0; o < c.out; ++o) {
      for (int i = 0; i < c.in; ++i) {
        double s = dW0[o * c.in + i];
        for (int n = 0; n < c.N; ++n) s += double(c.dy[n * c.out + o]) * c.x[n * c.in + i];
        EXPECT_NEAR(dW[o * c.in + i], s, 1e-5);
      }
    }
    // A null output is skipped, the other still computed.
    auto dW_only = dW0;
    ff::linear_backward(nullptr, dW_only.data(), c.dy.data(), c.x.data(), c.W.data(), c.N, c.in,
                        c.out);
    EXPECT_EQ(dW_only, dW);
  }
}

// The loss sum(dy o linear(x, W)) is linear in each input, so the central difference has no
// truncation error even in float with a large step; only float rounding of y remains.
TEST(Linear, BackwardMatchesFiniteDifferences) {
  for (LinearCase c : kLinearCases) {
    SCOPED_TRACE(c.out);
    std::vector<float> y(static_cast<size_t>(c.N) * c.out);
    auto loss = [&] {
      ff::linear_forward(y.data(), c.x.data(), c.W.data(), c.N, c.in, c.out);
      double s = 0;
      for (size_t i = 0; i < y.size(); ++i) s += double(y[i]) * c.dy[i];
      return s;
    };
    std::vector<float> dx(c.x.size(), 0.0f), dW(c.W.size(), 0.0f);
    ff::linear_backward(dx.data(), dW.data(), c.dy.data(), c.x.data(), c.W.data(), c.N, c.in,
                        c.out);
    const float h = 0.5f;
    for (auto [v, g, name] : {std::tuple{&c.x, &dx, "dx"}, std::tuple{&c.W, &dW, "dW"}}) {
      for (size_t i = 0; i < v->size(); ++i) {
        const float keep = (*v)[i];
        (*v)[i] = keep + h;
        const double up = loss();
        (*v)[i] = keep - h;
        const double down = loss();
        (*v)[i] = keep;
        ASSERT_NEAR((*g)[i], (up - down) / (2 * h), 1e-4 * (1 + std::abs((*g)[i])))
            << name << " " << i;
      }
    }
  }
}

// The model runs independent GEMMs from inside its own parallel regions; each must give what the
// same call gives alone (up to summation order, which the library may pick per thread count).
TEST(Gemm, InsideParallelRegionMatchesSerialCall) {
  const int parts = 4, M = 64, N = 48, K = 80;
  const auto A = to_float(randn(static_cast<size_t>(parts) * M * K, 21));
  const auto B = to_float(randn(static_cast<size_t>(K) * N, 22));
  std::vector<float> serial(static_cast<size_t>(parts) * M * N), nested(serial.size());
  for (int p = 0; p < parts; ++p)
    ff::gemm(false, false, M, N, K, 1.0f, A.data() + p * M * K, K, B.data(), N, 0.0f,
             serial.data() + p * M * N, N);
#pragma omp parallel for schedule(static)
  for (int p = 0; p < parts; ++p)
    ff::gemm(false, false, M, N, K, 1.0f, A.data() + p * M * K, K, B.data(), N, 0.0f,
             nested.data() + p * M * N, N);
  for (size_t i = 0; i < serial.size(); ++i) ASSERT_NEAR(nested[i], serial[i], 1e-4) << i;
}

TEST(Gemm, CeilingMeasurementIsPositiveAndNamed) {
  EXPECT_GT(ff::measure_sgemm_gflops(256, 1), 1.0);
  const std::string name = ff::gemm_backend_name();
  EXPECT_TRUE(name == "onednn" || name == "openblas") << name;
}

}  // namespace
