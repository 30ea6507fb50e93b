// The 16-bit weight gradient with dW's rows dealt out to the threads (kernels/wgrad_rows.h):
// on odd shapes, at 2 and 3 threads, accumulating into an existing gradient and overwriting one,
// it agrees with a double-precision product of the same 16-bit operands (an independent
// computation: fp32 accumulation over K terms is all that may differ); the split path really ran
// (it says so, and the context's counter counts it); at 1 thread, or switched off in the context,
// nothing is split and the model's backward gives bitwise the plain oneDNN product it gave before
// the split existed.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/gemm.h"
#include "kernels/gemm_precision.h"
#include "kernels/wgrad_rows.h"
#include "onednn_bf16_paths.h"

namespace {

using fftest::randn;
using fftest::to_float;

struct Shape {
  int M, N, K;  // dW (M, N), K tokens
};

std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  ff::convert_from_f32(ff::TypedPtr(h.data(), ff::DType::bf16), v.data(), v.size());
  return h;
}
std::vector<float> widened(const std::vector<uint16_t>& h) {  // exact
  std::vector<float> f(h.size());
  ff::convert_to_f32(f.data(), ff::ConstTypedPtr(h.data(), ff::DType::bf16), h.size());
  return f;
}

// Restores the OpenMP thread count the test changed.
struct Threads {
  int saved = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(saved); }
};

TEST(WgradRows, AgreesWithADoubleProductOfTheSameBf16Operands) {
  if (!ff::native_16bit_gemm(ff::DType::bf16)) GTEST_SKIP() << "no native bf16 GEMM here: nothing is split";
  for (int threads : {2, 3}) {
    const Threads team(threads);
    for (Shape s : {Shape{37, 45, 53}, Shape{100, 71, 129}, Shape{384, 96, 256}, Shape{50, 384, 7}}) {
      for (float beta : {1.0f, 0.0f}) {
        // A stored (K, M) with a padded row (lda = M + 3), B stored (K, N), C (M, N) with ldc = N + 1.
        const int lda = s.M + 3, ldb = s.N, ldc = s.N + 1;
        const auto a = bf16_of(to_float(randn(size_t(s.K) * lda, 11)));
        const auto b = bf16_of(to_float(randn(size_t(s.K) * ldb, 12)));
        const std::vector<float> c0 = to_float(randn(size_t(s.M) * ldc, 13)), aw = widened(a), bw = widened(b);
        std::vector<float> c = c0;
        ASSERT_TRUE(ff::wgrad_rows_per_thread(s.M, s.N, s.K, ff::ConstTypedPtr(a.data(), ff::DType::bf16), lda,
                                              ff::ConstTypedPtr(b.data(), ff::DType::bf16), ldb, beta, c.data(),
                                              ldc))
            << s.M << "x" << s.N << "x" << s.K << " at " << threads << " threads";
        for (int i = 0; i < s.M; ++i) {
          for (int j = 0; j < s.N; ++j) {
            double sum = beta * double(c0[size_t(i) * ldc + j]), mag = std::fabs(sum);
            for (int k = 0; k < s.K; ++k) {
              const double t = double(aw[size_t(k) * lda + i]) * bw[size_t(k) * ldb + j];
              sum += t, mag += std::fabs(t);
            }
            ASSERT_NEAR(c[size_t(i) * ldc + j], sum, 1e-6 * (s.K + 1) * mag + 1e-6)
                << i << "," << j << " of " << s.M << "x" << s.N << "x" << s.K << " beta " << beta;
          }
          EXPECT_EQ(c[size_t(i) * ldc + s.N], c0[size_t(i) * ldc + s.N]) << "the padding column was written";
        }
      }
    }
  }
}

// dW += dy^T x through the model's linear backward, its dx discarded.
std::vector<float> model_weight_grad(const ff::GemmContext& g, const std::vector<float>& dy,
                                     const std::vector<uint16_t>& x16, const std::vector<float>& W,
                                     std::vector<float> dW, int N, int in, int out) {
  std::vector<float> dx(size_t(N) * in);
  ff::linear_backward_run_precision(g, dx.data(), dW.data(), dy.data(), ff::ConstTypedPtr(x16.data(), ff::DType::bf16),
                                    W.data(), N, in, out);
  return dW;
}

TEST(WgradRows, OneThreadOrSwitchedOffGivesThePlainProductBitwise) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is split"); !why.empty()) GTEST_SKIP() << why;
  ff::GemmCounts counts;
  ff::GemmContext bf16{.input_dtype = ff::DType::bf16};
  bf16.counts = &counts;
  ff::GemmContext bf16_off = bf16;
  bf16_off.wgrad_rows = false;
  const int N = 96, in = 80, out = 112;
  const auto dy = to_float(randn(size_t(N) * out, 21)), W = to_float(randn(size_t(out) * in, 22));
  const auto x16 = bf16_of(to_float(randn(size_t(N) * in, 23)));
  const auto dW0 = to_float(randn(size_t(out) * in, 24));
  // The product the backward ran before the split: one oneDNN matmul over the rounded dy.
  const auto dy16 = bf16_of(dy);
  std::vector<float> plain = dW0;
  {
    const Threads team(2);
    ff::gemm(true, false, out, in, N, 1.0f, ff::ConstTypedPtr(dy16.data(), ff::DType::bf16), out,
             ff::ConstTypedPtr(x16.data(), ff::DType::bf16), in, 1.0f, ff::TypedPtr(plain.data()), in);
  }
  auto bitwise = [](const std::vector<float>& p, const std::vector<float>& q) {
    return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0;
  };
  {
    const Threads team(2);
    const long before = counts.wgrad_rows_products.load();
    const auto off = model_weight_grad(bf16_off, dy, x16, W, dW0, N, in, out);
    EXPECT_EQ(counts.wgrad_rows_products.load(), before);
    EXPECT_TRUE(bitwise(off, plain)) << "switched off";
    const auto on = model_weight_grad(bf16, dy, x16, W, dW0, N, in, out);
    EXPECT_EQ(counts.wgrad_rows_products.load(), before + 1);
    for (size_t i = 0; i < on.size(); ++i) ASSERT_NEAR(on[i], plain[i], 2e-5 * (std::fabs(plain[i]) + 1.0)) << i;
  }
  {
    const Threads team(1);
    const long before = counts.wgrad_rows_products.load();
    std::vector<float> one_thread_plain = dW0;
    ff::gemm(true, false, out, in, N, 1.0f, ff::ConstTypedPtr(dy16.data(), ff::DType::bf16), out,
             ff::ConstTypedPtr(x16.data(), ff::DType::bf16), in, 1.0f, ff::TypedPtr(one_thread_plain.data()), in);
    EXPECT_TRUE(bitwise(model_weight_grad(bf16, dy, x16, W, dW0, N, in, out), one_thread_plain)) << "1 thread";
    EXPECT_EQ(counts.wgrad_rows_products.load(), before);
  }
}

}  // namespace
