// The 16-bit GEMM and conversions: conversions bitwise against core/dtype.h's scalar functions,
// the typed GEMM against a double-precision product of the same 16-bit values (only fp32
// accumulation error allowed), and against the fp32 GEMM of the unrounded inputs within the
// rounding of the inputs (bf16: 8 significant bits, relative 2^-8 per operand).
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <cstdint>
#include <vector>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"

namespace {

using fftest::randn;
using fftest::to_float;

// Every float whose top 16 bits are `hi` for hi in [0, 2^16) and low 16 bits from a few patterns
// that cover ties, just-below and just-above ties, plus the specials.
std::vector<float> conversion_inputs() {
  std::vector<float> v;
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1000, 0xf000};
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t u = (hi << 16) | lo;
      float f;
      std::memcpy(&f, &u, 4);
      v.push_back(f);
    }
  return v;
}

TEST(Convert, Bf16AndF16BitwiseEqualScalarOverEveryHighHalf) {
  const auto x = conversion_inputs();
  std::vector<uint16_t> b(x.size()), h(x.size());
  ff::convert_from_f32(ff::TypedPtr(b.data(), ff::DType::bf16), x.data(), x.size());
  ff::convert_from_f32(ff::TypedPtr(h.data(), ff::DType::f16), x.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(b[i], ff::f32_to_bf16(x[i])) << "bf16 of bits " << std::hex << std::bit_cast<uint32_t>(x[i]);
    if (std::isnan(x[i])) ASSERT_TRUE(std::isnan(ff::f16_to_f32(h[i])));
    else ASSERT_EQ(h[i], ff::f32_to_f16(x[i])) << "f16 of bits " << std::hex << std::bit_cast<uint32_t>(x[i]);
  }
}

TEST(Convert, WideningIsExactForEveryHalfPattern) {
  std::vector<uint16_t> all(0x10000);
  for (uint32_t i = 0; i < 0x10000; ++i) all[i] = uint16_t(i);
  std::vector<float> b(all.size()), h(all.size());
  ff::convert_to_f32(b.data(), ff::ConstTypedPtr(all.data(), ff::DType::bf16), all.size());
  ff::convert_to_f32(h.data(), ff::ConstTypedPtr(all.data(), ff::DType::f16), all.size());
  for (uint32_t i = 0; i < 0x10000; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(b[i]), std::bit_cast<uint32_t>(ff::bf16_to_f32(uint16_t(i))));
    const float want = ff::f16_to_f32(uint16_t(i));
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(h[i]));
    else ASSERT_EQ(std::bit_cast<uint32_t>(h[i]), std::bit_cast<uint32_t>(want)) << i;
  }
}

double at(const std::vector<float>& X, bool trans, int ld, int i, int j) {
  return trans ? X[size_t(j) * ld + i] : X[size_t(i) * ld + j];
}

void check_typed_gemm(ff::DType t, double input_rel) {
  const int M = 37, N = 45, K = 131;
  const float alpha = 0.7f, beta = 0.3f;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
      const auto A = to_float(randn(size_t(ta ? K : M) * lda, 21));
      const auto B = to_float(randn(size_t(tb ? N : K) * ldb, 22));
      auto C = to_float(randn(size_t(M) * ldc, 23));
      const auto C0 = C;
      std::vector<uint16_t> a16(A.size()), b16(B.size());
      ff::convert_from_f32(ff::TypedPtr(a16.data(), t), A.data(), A.size());
      ff::convert_from_f32(ff::TypedPtr(b16.data(), t), B.data(), B.size());
      std::vector<float> Ar(A.size()), Br(B.size());  // the values the 16-bit GEMM really sees
      ff::convert_to_f32(Ar.data(), ff::ConstTypedPtr(a16.data(), t), A.size());
      ff::convert_to_f32(Br.data(), ff::ConstTypedPtr(b16.data(), t), B.size());
      ff::gemm(ta, tb, M, N, K, alpha, ff::ConstTypedPtr(a16.data(), t), lda, ff::ConstTypedPtr(b16.data(), t),
               ldb, beta, ff::TypedPtr(C.data()), ldc);
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          double s = 0, s_unrounded = 0, mag = 0;
          for (int p = 0; p < K; ++p) {
            s += at(Ar, ta, lda, i, p) * at(Br, tb, ldb, p, j);
            s_unrounded += at(A, ta, lda, i, p) * at(B, tb, ldb, p, j);
            mag += std::abs(at(A, ta, lda, i, p) * at(B, tb, ldb, p, j));
          }
          const double c0 = beta * C0[size_t(i) * ldc + j], got = C[size_t(i) * ldc + j];
          // fp32 accumulation of exact 16-bit products: K additions' rounding only.
          ASSERT_NEAR(got, alpha * s + c0, 1e-6 * (mag + 1)) << "ta=" << ta << " tb=" << tb;
          // Against the unrounded fp32 inputs: each product off by at most ~2 input roundings.
          ASSERT_NEAR(got, alpha * s_unrounded + c0, 2 * input_rel * mag + 1e-6) << "ta=" << ta << " tb=" << tb;
        }
        for (int j = N; j < ldc; ++j) ASSERT_EQ(C[size_t(i) * ldc + j], C0[size_t(i) * ldc + j]);
      }
    }
}

TEST(GemmBf16, AllTransposesMatchDoubleProductOfTheBf16Values) { check_typed_gemm(ff::DType::bf16, 1.0 / 256); }
TEST(GemmBf16, F16AllTransposesMatchDoubleProductOfTheF16Values) { check_typed_gemm(ff::DType::f16, 1.0 / 2048); }

TEST(GemmBf16, MixedOrNon32OutputIsRefusedByName) {
  std::vector<uint16_t> a(16);
  std::vector<float> c(16);
  try {
    ff::gemm(false, false, 4, 4, 4, 1.0f, ff::ConstTypedPtr(a.data(), ff::DType::bf16), 4,
             ff::ConstTypedPtr(a.data(), ff::DType::f16), 4, 0.0f, ff::TypedPtr(c.data()), 4);
    FAIL() << "bf16 x f16 accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16 x f16"), std::string::npos) << e.what();
  }
}

TEST(GemmBf16, PathIsNamed) {
  const std::string d = ff::bf16_path_description();
  EXPECT_NE(d.find(ff::bf16_path_name(ff::bf16_path())), std::string::npos) << d;
}

}  // namespace
