// Output gradients stored 16-bit by the kernel that makes them (model/llama_rounded_grads.cpp):
// RoPE's backward over a fused q/k/v gradient row writes exactly the bits of the two in-place
// rotations converted afterwards (v's columns rounded as they are), and RMSNorm's backward leaves
// dx and dw bitwise the plain kernel's while its 16-bit copy of dx is dx converted. In the forward,
// SwiGLU rounding the GEMM's fp32 gate_up as it reads it is the separate conversion followed by the
// 16-bit kernel, both outputs bitwise. The loss rounding each gradient row as it finishes it gives
// the fp32 gradient (unchanged) converted. Special values
// (NaN, overflow to f16's inf, a subnormal) cross the rounding's edge cases.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/cross_entropy.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace {

using fftest::randn;
using fftest::to_float;

std::vector<uint16_t> rounded_bits(const std::vector<float>& x, ff::DType t) {
  std::vector<uint16_t> r(x.size());
  ff::convert_from_f32(ff::TypedPtr(r.data(), t), x.data(), x.size());
  return r;
}

void add_special_values(std::vector<float>& x) {
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[x.size() / 2] = 3e38f;   // beyond f16: inf there, finite in bf16
  x[x.size() - 2] = 1e-40f;  // an fp32 subnormal
}

// GQA (6 query heads, 2 kv heads, D 10: a vector tail in each half) and a padded row stride.
TEST(GradStore, RopeBackwardRoundedIsBothRotationsThenConverted) {
  const int B = 2, T = 9, H = 6, Hkv = 2, D = 10, Q = (H + 2 * Hkv) * D + 3;
  std::vector<float> cos(size_t(T) * D / 2), sin(cos.size());
  ff::rope_tables(cos.data(), sin.data(), T, D, 10000.0f);
  auto dx = to_float(randn(size_t(B) * T * Q, 11, 2.0));
  add_special_values(dx);
  std::vector<float> expect = dx;
  ff::rope_backward(expect.data(), cos.data(), sin.data(), B, T, H, D, Q);
  ff::rope_backward(expect.data() + H * D, cos.data(), sin.data(), B, T, Hkv, D, Q);
  const std::vector<float> before = dx;
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<uint16_t> out(dx.size());
    ff::rope_backward_rounded(ff::TypedPtr(out.data(), t), dx.data(), cos.data(), sin.data(), B, T, H, Hkv, D, Q);
    EXPECT_EQ(out, rounded_bits(expect, t)) << ff::dtype_name(t);
    EXPECT_EQ(std::memcmp(dx.data(), before.data(), dx.size() * 4), 0) << "dx must be left as it was";
  }
  EXPECT_THROW(ff::rope_backward_rounded(ff::TypedPtr(dx.data()), dx.data(), cos.data(), sin.data(), B, T, H, Hkv,
                                         D, Q),
               std::logic_error);
}

TEST(GradStore, RmsnormBackwardCopyIsTheUpdatedDxConverted) {
  const int N = 13, C = 77;
  auto x = to_float(randn(size_t(N) * C, 21, 3.0));
  auto w = to_float(randn(size_t(C), 22, 1.0));
  auto dy = to_float(randn(size_t(N) * C, 23, 1.0));
  const auto dx0 = to_float(randn(size_t(N) * C, 24, 5.0));  // dx accumulates: start non-zero
  std::vector<float> y(x.size()), rstd(N);
  ff::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  std::vector<float> dx0_special = dx0;  // carried into the updated dx
  dx0_special[7] = std::numeric_limits<float>::quiet_NaN();
  dx0_special[size_t(N) * C / 2] = 3e38f;
  std::vector<float> expect = dx0_special, dw_expect(C, 0.5f);
  ff::rmsnorm_backward(expect.data(), dw_expect.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<float> dx2 = dx0_special, dw2(C, 0.5f);
    std::vector<uint16_t> copy(dx2.size());
    ff::rmsnorm_backward(dx2.data(), ff::TypedPtr(copy.data(), t), dw2.data(), dy.data(), x.data(), w.data(),
                         rstd.data(), N, C);
    EXPECT_EQ(std::memcmp(dx2.data(), expect.data(), dx2.size() * 4), 0) << ff::dtype_name(t);
    EXPECT_EQ(std::memcmp(dw2.data(), dw_expect.data(), dw2.size() * 4), 0) << ff::dtype_name(t);
    EXPECT_EQ(copy, rounded_bits(expect, t)) << ff::dtype_name(t);
  }
}

TEST(GradStore, CrossEntropyRoundsEachGradientRowAsItGoes) {
  const int N = 5, V = 9001;  // rows longer than the row conversion's chunk
  const auto logits = to_float(randn(size_t(N) * V, 41, 3.0));
  const std::vector<int32_t> targets = {0, 17, V - 1, 4096, 8192};
  std::vector<float> grad = logits, losses(N), losses16(N);
  const double total = ff::cross_entropy_forward_backward(grad.data(), losses.data(), targets.data(), N, V, 0.25f);
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<float> grad2 = logits;
    std::vector<uint16_t> rounded(size_t(N) * V);
    const double total16 = ff::cross_entropy_forward_backward(grad2.data(), losses16.data(), targets.data(), N, V,
                                                              0.25f, ff::TypedPtr(rounded.data(), t));
    EXPECT_EQ(std::memcmp(&total, &total16, sizeof total), 0) << ff::dtype_name(t);
    EXPECT_EQ(std::memcmp(grad.data(), grad2.data(), grad.size() * 4), 0) << ff::dtype_name(t);
    EXPECT_EQ(rounded, rounded_bits(grad, t)) << ff::dtype_name(t);
  }
}

TEST(GradStore, SwigluRoundingTheStagedGateUpIsConvertThenTheTypedForward) {
  const int N = 11, F = 53;
  auto gu = to_float(randn(size_t(N) * 2 * F, 31, 4.0));
  add_special_values(gu);
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    const std::vector<uint16_t> kept_expect = rounded_bits(gu, t);
    std::vector<uint16_t> h_expect(size_t(N) * F), h(size_t(N) * F), kept(gu.size());
    ff::swiglu_forward(ff::TypedPtr(h_expect.data(), t), ff::ConstTypedPtr(kept_expect.data(), t), N, F);
    ff::swiglu_forward_rounding(ff::TypedPtr(h.data(), t), ff::TypedPtr(kept.data(), t), gu.data(), N, F);
    EXPECT_EQ(kept, kept_expect) << ff::dtype_name(t);
    EXPECT_EQ(h, h_expect) << ff::dtype_name(t);
  }
}

}  // namespace
