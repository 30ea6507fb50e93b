#include <cstdint>

#include "check.h"
#include "core/dtype.h"
#include "kernels/bias.h"

namespace {

using fftest::randn;
using fftest::to_float;

constexpr int kN = 37, kM = 41, kLd = 50;  // M not a multiple of the 16-column block; rows wider than M

TEST(Bias, ForwardAddsToEachRowsFirstMColumns) {
  const auto y0 = to_float(randn(size_t(kN) * kLd, 1)), b = to_float(randn(kM, 2));
  auto y = y0;
  ff::bias_forward(y.data(), b.data(), kN, kM, kLd);
  for (int n = 0; n < kN; ++n)
    for (int j = 0; j < kLd; ++j)
      EXPECT_EQ(y[n * kLd + j], j < kM ? y0[n * kLd + j] + b[j] : y0[n * kLd + j]);
}

// dbias += column sums, against a double sum of the same values; accumulates into what is there.
TEST(Bias, BackwardAccumulatesColumnSums) {
  const auto dy = to_float(randn(size_t(kN) * kLd, 3));
  std::vector<float> db(kM, 0.5f);
  ff::bias_backward(db.data(), ff::ConstTypedPtr(dy.data()), kN, kM, kLd);
  for (int j = 0; j < kM; ++j) {
    double want = 0.5;
    for (int n = 0; n < kN; ++n) want += dy[n * kLd + j];
    EXPECT_NEAR(db[j], want, 1e-5) << j;
  }
}

// A 16-bit operand (the rounded copy a bf16 GEMM reads) is widened and summed in fp32.
TEST(Bias, BackwardReadsSixteenBitRows) {
  const auto x = randn(size_t(kN) * kLd, 4);
  std::vector<uint16_t> bf(x.size()), hf(x.size());
  for (size_t i = 0; i < x.size(); ++i) bf[i] = ff::f32_to_bf16(float(x[i])), hf[i] = ff::f32_to_f16(float(x[i]));
  std::vector<float> db_bf(kM, 0.0f), db_hf(kM, 0.0f);
  ff::bias_backward(db_bf.data(), ff::ConstTypedPtr(bf.data(), ff::DType::bf16), kN, kM, kLd);
  ff::bias_backward(db_hf.data(), ff::ConstTypedPtr(hf.data(), ff::DType::f16), kN, kM, kLd);
  for (int j = 0; j < kM; ++j) {
    double want_bf = 0, want_hf = 0;
    for (int n = 0; n < kN; ++n)
      want_bf += ff::bf16_to_f32(bf[n * kLd + j]), want_hf += ff::f16_to_f32(hf[n * kLd + j]);
    EXPECT_NEAR(db_bf[j], want_bf, 1e-5) << j;
    EXPECT_NEAR(db_hf[j], want_hf, 1e-5) << j;
  }
}

// fp32 rows with round_to: the sums of the rows rounded first, bitwise those of the rounded copy.
TEST(Bias, BackwardRoundsFp32RowsAsTheGemmDoes) {
  const auto x = to_float(randn(size_t(kN) * kLd, 6));
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<uint16_t> rounded(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      rounded[i] = t == ff::DType::bf16 ? ff::f32_to_bf16(x[i]) : ff::f32_to_f16(x[i]);
    std::vector<float> from_f32(kM, 0.0f), from_16(kM, 0.0f), plain(kM, 0.0f);
    ff::bias_backward(from_f32.data(), ff::ConstTypedPtr(x.data()), kN, kM, kLd, t);
    ff::bias_backward(from_16.data(), ff::ConstTypedPtr(rounded.data(), t), kN, kM, kLd);
    ff::bias_backward(plain.data(), ff::ConstTypedPtr(x.data()), kN, kM, kLd);
    EXPECT_EQ(from_f32, from_16) << ff::dtype_name(t);
    EXPECT_NE(from_f32, plain) << ff::dtype_name(t);
  }
}

// Each column is summed over rows in order by one thread: the same bits at any thread count.
TEST(Bias, BackwardIsTheSameAtAnyThreadCount) {
  const auto dy = to_float(randn(size_t(kN) * kLd, 5));
  std::vector<float> one(kM, 0.0f), many(kM, 0.0f);
  {
    fftest::ScopedThreads t(1);
    ff::bias_backward(one.data(), ff::ConstTypedPtr(dy.data()), kN, kM, kLd);
  }
  {
    fftest::ScopedThreads t(3);
    ff::bias_backward(many.data(), ff::ConstTypedPtr(dy.data()), kN, kM, kLd);
  }
  EXPECT_EQ(one, many);
}

}  // namespace
