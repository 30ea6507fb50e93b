// Weights packed in oneDNN's blocked layout (kernels/packed_weights.h) for the 16-bit products that
// read the step's weight copy: x W^T and dy W give exactly the bits of the plain-layout products,
// on odd shapes, with beta = 1 (the residual add), alpha, and an evaluation-sized M after a training
// M; each weight is packed once per refresh and per product kind (not per call); after the weights
// change and the copy is refreshed the product is the new weights' (step-then-compare); the packed
// copies are in the ledger's params category and go with the copy; and the products agree with a
// double-precision product of the same bf16-rounded operands (an independent computation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "core/memory.h"
#include "kernels/convert.h"
#include "kernels/gemm.h"
#include "kernels/gemm_precision.h"
#include "kernels/packed_weights.h"
#include "kernels/weight_copy.h"
#include "onednn_bf16_paths.h"

namespace {

using fftest::randn;
using fftest::to_float;

struct Shape {
  int N, in, out;
};

// y(N,out) = x W^T (+ y when accumulate) and dx(N,in) = dy W, bf16 inputs rounded on the way in.
struct Products {
  std::vector<float> y, dx;
};
Products run(const ff::GemmContext& g, const std::vector<float>& x, const float* W, const std::vector<float>& dy,
             Shape s, bool accumulate) {
  Products p{std::vector<float>(size_t(s.N) * s.out, 0.25f), std::vector<float>(size_t(s.N) * s.in)};
  ff::gemm_run_precision(g, false, true, s.N, s.out, s.in, 1.0f, x.data(), s.in, W, s.in,
                         accumulate ? 1.0f : 0.0f, p.y.data(), s.out);
  ff::gemm_run_precision(g, false, false, s.N, s.in, s.out, 1.0f, dy.data(), s.out, W, s.in, 0.0f, p.dx.data(),
                         s.in, ff::GemmRole::dgrad);
  return p;
}

// The same products with packing off: the plain layout.
Products run_plain(const ff::GemmContext& g, const std::vector<float>& x, const float* W,
                   const std::vector<float>& dy, Shape s, bool accumulate) {
  ff::GemmContext plain = g;
  plain.packed_weights = false;
  return run(plain, x, W, dy, s, accumulate);
}

// A bf16 context whose GEMMs read `copy`.
ff::GemmContext bf16_reading(const ff::WeightCopy& copy) {
  ff::GemmContext g{.input_dtype = ff::DType::bf16};
  g.twins.push_back(&copy);
  return g;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The bf16 values of v, widened back to fp32 (exact).
std::vector<float> bf16_values(const float* v, size_t n) {
  std::vector<uint16_t> h(n);
  ff::convert_from_f32(ff::TypedPtr(h.data(), ff::DType::bf16), v, n);
  std::vector<float> r(n);
  ff::convert_to_f32(r.data(), ff::ConstTypedPtr(h.data(), ff::DType::bf16), n);
  return r;
}

int64_t params_bytes() {
  return ff::MemoryLedger::instance().snapshot().current[int(ff::MemCategory::params)];
}

TEST(PackedWeights, ProductsAreBitwiseThePlainOnesOnOddShapes) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is packed"); !why.empty()) GTEST_SKIP() << why;
  for (Shape s : {Shape{37, 96, 80}, Shape{53, 71, 45}, Shape{256, 384, 1152}, Shape{1, 64, 64}}) {
    for (bool accumulate : {false, true}) {
      std::vector<float> params = to_float(randn(size_t(2) * s.out * s.in + 7, 1));
      const float* W = params.data() + size_t(s.out) * s.in;  // the second of two weights in one buffer
      const auto x = to_float(randn(size_t(s.N) * s.in, 2)), dy = to_float(randn(size_t(s.N) * s.out, 3));
      ff::WeightCopy copy({{params.data(), params.size()}}, ff::DType::bf16);
      const ff::GemmContext bf16 = bf16_reading(copy);
      const ff::FreshWeightCopy fresh(&copy);
      const Products plain = run_plain(bf16, x, W, dy, s, accumulate), packed = run(bf16, x, W, dy, s, accumulate);
      EXPECT_EQ(copy.packed().packings(), 2u) << s.N << "x" << s.in << "x" << s.out;  // x W^T and dy W
      EXPECT_TRUE(bitwise_equal(packed.y, plain.y)) << s.N << "x" << s.in << "x" << s.out << accumulate;
      EXPECT_TRUE(bitwise_equal(packed.dx, plain.dx)) << s.N << "x" << s.in << "x" << s.out;
      // Against a double product of the bf16 values: fp32 accumulation over K terms only.
      const auto xr = bf16_values(x.data(), x.size()), wr = bf16_values(W, size_t(s.out) * s.in);
      for (int i = 0; i < s.N; i += 5)
        for (int j = 0; j < s.out; j += 3) {
          double sum = accumulate ? 0.25 : 0.0, mag = accumulate ? 0.25 : 0.0;
          for (int k = 0; k < s.in; ++k) {
            const double t = double(xr[size_t(i) * s.in + k]) * wr[size_t(j) * s.in + k];
            sum += t, mag += std::fabs(t);
          }
          ASSERT_NEAR(packed.y[size_t(i) * s.out + j], sum, 1e-6 * s.in * mag + 1e-6) << i << "," << j;
        }
    }
  }
}

// gemm_forward_rounded: the packed product storing bf16 itself gives the bits of the fp32 product
// rounded afterwards (the unfused path it replaces), writes nothing to the fp32 staging, shares the
// x W^T packing, and agrees with a double product of the bf16 operands to bf16's half ulp; without
// packing it leaves the fp32 product in the staging (for the caller to round) and the output alone.
TEST(PackedWeights, AProductRoundingItsOwnOutputIsTheFp32ProductRounded) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is packed"); !why.empty()) GTEST_SKIP() << why;
  for (Shape s : {Shape{37, 96, 80}, Shape{256, 384, 2048}, Shape{1, 64, 64}}) {
    const std::string at = std::to_string(s.N) + "x" + std::to_string(s.in) + "x" + std::to_string(s.out);
    std::vector<float> W = to_float(randn(size_t(s.out) * s.in, 11));
    const auto x = bf16_values(to_float(randn(size_t(s.N) * s.in, 12)).data(), size_t(s.N) * s.in);
    std::vector<uint16_t> x16(x.size());
    ff::convert_from_f32(ff::TypedPtr(x16.data(), ff::DType::bf16), x.data(), x.size());
    const ff::ConstTypedPtr a(x16.data(), ff::DType::bf16);
    ff::WeightCopy copy({{W.data(), W.size()}}, ff::DType::bf16);
    const ff::GemmContext bf16 = bf16_reading(copy);
    const ff::FreshWeightCopy fresh(&copy);
    const size_t n = size_t(s.N) * s.out;
    // Unfused: the fp32 product, then rounded.
    std::vector<float> y32(n);
    ff::gemm_run_precision(bf16, false, true, s.N, s.out, s.in, 1.0f, a, s.in, W.data(), s.in, 0.0f, y32.data(),
                           s.out);
    std::vector<uint16_t> expect(n);
    ff::convert_from_f32(ff::TypedPtr(expect.data(), ff::DType::bf16), y32.data(), n);
    // Fused, packed: the staging keeps its sentinel.
    std::vector<float> staging(n, -7.0f);
    std::vector<uint16_t> got(n, 0xffff);
    EXPECT_TRUE(ff::gemm_forward_rounded(bf16, ff::TypedPtr(got.data(), ff::DType::bf16), a, W.data(), s.N, s.out,
                                         s.in, staging.data()))
        << at;
    EXPECT_EQ(std::memcmp(got.data(), expect.data(), n * sizeof(uint16_t)), 0) << at;
    EXPECT_TRUE(std::all_of(staging.begin(), staging.end(), [](float v) { return v == -7.0f; })) << at;
    EXPECT_EQ(copy.packed().packings(), 1u) << at;  // the fp32 product's x W^T packing, read again
    // Plain (packing off): the fp32 product left in the staging, the output untouched.
    ff::GemmContext plain = bf16;
    plain.packed_weights = false;
    std::vector<uint16_t> untouched(n, 0xffff);
    EXPECT_FALSE(ff::gemm_forward_rounded(plain, ff::TypedPtr(untouched.data(), ff::DType::bf16), a, W.data(), s.N,
                                          s.out, s.in, staging.data()))
        << at;
    EXPECT_EQ(std::memcmp(staging.data(), y32.data(), n * sizeof(float)), 0) << at;
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint16_t v) { return v == 0xffff; })) << at;
    // Against a double product of the bf16 values: fp32 accumulation, then one bf16 rounding.
    std::vector<float> gotf(n);
    ff::convert_to_f32(gotf.data(), ff::ConstTypedPtr(got.data(), ff::DType::bf16), n);
    const auto wr = bf16_values(W.data(), W.size());
    for (int i = 0; i < s.N; i += 3)
      for (int j = 0; j < s.out; j += 7) {
        double sum = 0, mag = 0;
        for (int k = 0; k < s.in; ++k) {
          const double t = double(x[size_t(i) * s.in + k]) * wr[size_t(j) * s.in + k];
          sum += t, mag += std::fabs(t);
        }
        ASSERT_NEAR(gotf[size_t(i) * s.out + j], sum, std::ldexp(std::fabs(sum), -8) + 1e-6 * s.in * mag + 1e-6)
            << at << " " << i << "," << j;
      }
  }
}

TEST(PackedWeights, AProductRoundingItsOutputRefusesAnotherType) {
  std::vector<float> W(64 * 64, 0.5f), x(4 * 64, 1.0f), y(4 * 64), staging(4 * 64);
  const ff::GemmContext bf16{.input_dtype = ff::DType::bf16};
  EXPECT_THROW(ff::gemm_forward_rounded(bf16, ff::TypedPtr(y.data()), x.data(), W.data(), 4, 64, 64, staging.data()),
               std::logic_error);
  std::vector<uint16_t> y16(4 * 64);
  EXPECT_THROW(ff::gemm_forward_rounded(bf16, ff::TypedPtr(y16.data(), ff::DType::f16), x.data(), W.data(), 4, 64,
                                        64, staging.data()),
               std::logic_error);
}

TEST(PackedWeights, PackedOncePerRefreshAndReadTheNewWeightsAfterAStep) {
  if (const std::string why = fftest::why_onednn_bf16_is_off("nothing is packed"); !why.empty()) GTEST_SKIP() << why;
  const Shape s{64, 96, 80};
  std::vector<float> W = to_float(randn(size_t(s.out) * s.in, 4));
  const auto x = to_float(randn(size_t(s.N) * s.in, 5)), dy = to_float(randn(size_t(s.N) * s.out, 6));
  const int64_t before = params_bytes();
  {
    ff::WeightCopy copy({{W.data(), W.size()}}, ff::DType::bf16);
    const ff::GemmContext bf16 = bf16_reading(copy);
    Products first;
    {
      const ff::FreshWeightCopy fresh(&copy);
      first = run(bf16, x, W.data(), dy, s, false);
      run(bf16, x, W.data(), dy, s, false);  // the second micro-batch: no packing
      EXPECT_EQ(copy.packed().packings(), 2u);
      // A smaller M (an evaluation batch) reuses the packing.
      std::vector<float> y(size_t(5) * s.out);
      ff::gemm_run_precision(bf16, false, true, 5, s.out, s.in, 1.0f, x.data(), s.in, W.data(), s.in, 0.0f,
                             y.data(), s.out);
      EXPECT_EQ(copy.packed().packings(), 2u);
      EXPECT_EQ(std::memcmp(y.data(), first.y.data(), y.size() * sizeof(float)), 0);
    }
    // Packed: x W^T's (out, in) and dy W's (in, out), 2 bytes each, padded to 64 x 32 blocks.
    EXPECT_EQ(copy.packed().bytes(), size_t(2 * (128 * 96 + 128 * 96)));
    EXPECT_EQ(params_bytes() - before, int64_t(W.size() * 2 + copy.packed().bytes()));
    // An optimizer step changes the weights; the next step's refresh must repack them.
    for (float& w : W) w *= -0.5f;
    {
      const ff::FreshWeightCopy fresh(&copy);
      const Products after = run(bf16, x, W.data(), dy, s, false), plain = run_plain(bf16, x, W.data(), dy, s, false);
      EXPECT_EQ(copy.packed().packings(), 4u);
      EXPECT_TRUE(bitwise_equal(after.y, plain.y));
      EXPECT_TRUE(bitwise_equal(after.dx, plain.dx));
      EXPECT_FALSE(bitwise_equal(after.y, first.y));  // the old packing was not read
    }
    // Stale (outside a step): products round per call, no packing is read or made.
    const Products stale = run(bf16, x, W.data(), dy, s, false), plain = run_plain(bf16, x, W.data(), dy, s, false);
    EXPECT_EQ(copy.packed().packings(), 4u);
    EXPECT_TRUE(bitwise_equal(stale.y, plain.y));
  }
  EXPECT_EQ(params_bytes(), before);  // released with the copy
}

TEST(PackedWeights, ASliceOfAWeightRunsPlain) {
  const Shape s{16, 64, 48};
  std::vector<float> W = to_float(randn(size_t(s.out) * s.in, 7));
  const auto x = to_float(randn(size_t(s.N) * s.in, 8));
  ff::WeightCopy copy({{W.data(), W.size()}}, ff::DType::bf16);
  const ff::GemmContext bf16 = bf16_reading(copy);
  const ff::FreshWeightCopy fresh(&copy);
  std::vector<float> y(size_t(s.N) * s.out);
  // The first 32 input columns of W (ldb = in > K): not a dense matrix, so not packed.
  ff::gemm_run_precision(bf16, false, true, s.N, s.out, 32, 1.0f, x.data(), s.in, W.data(), s.in, 0.0f, y.data(),
                         s.out);
  EXPECT_EQ(copy.packed().packings(), 0u);
  EXPECT_EQ(copy.packed().bytes(), 0u);
}

}  // namespace
