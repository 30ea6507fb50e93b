// Activations stored 16-bit by the kernel that writes them (model/activations.h): RMSNorm and
// SwiGLU writing bf16 / f16 give exactly the bits of their fp32 output converted afterwards (the
// arithmetic is the same, only the store rounds), and a GEMM reading a stored 16-bit operand gives
// exactly what it gives when it rounds the fp32 operand itself: forward, dgrad + wgrad, wgrad alone.
// SwiGLU reading a 16-bit gate_up is the fp32 kernel on the widened values, and its backward
// writing a 16-bit output gradient gives the fp32 gradient's bits rounded.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/gemm_precision.h"
#include "kernels/rmsnorm.h"
#include "kernels/swiglu.h"

namespace {

using fftest::randn;
using fftest::to_float;

std::vector<uint16_t> rounded(const std::vector<float>& x, ff::DType t) {
  std::vector<uint16_t> r(x.size());
  ff::convert_from_f32(ff::TypedPtr(r.data(), t), x.data(), x.size());
  return r;
}

// Odd widths (a vector tail in every row) and a row of huge values whose outputs overflow bf16's
// neighbours and f16 (inf), so the special cases of the rounding are crossed too.
TEST(ActStore, RmsnormWritesTheRoundedBitsOfItsFp32Output) {
  const int N = 13, C = 77;
  auto x = to_float(randn(size_t(N) * C, 1, 3.0));
  auto w = to_float(randn(size_t(C), 2, 1.0));
  for (int c = 0; c < C; ++c) x[size_t(5) * C + c] *= 1e30f;  // rstd ~1e-30: finite outputs
  for (int c = 0; c < C; ++c) w[size_t(c)] *= c % 7 == 0 ? 1e5f : 1.0f;  // some outputs beyond f16's range
  std::vector<float> y(x.size()), rstd(N), rstd16(N);
  ff::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<uint16_t> y16(x.size());
    ff::rmsnorm_forward(ff::TypedPtr(y16.data(), t), rstd16.data(), x.data(), w.data(), N, C, 1e-5f);
    EXPECT_EQ(y16, rounded(y, t)) << ff::dtype_name(t);
    EXPECT_EQ(std::memcmp(rstd.data(), rstd16.data(), N * sizeof(float)), 0) << ff::dtype_name(t);
  }
  // An f32 TypedPtr is the fp32 kernel.
  std::vector<float> y32(x.size());
  ff::rmsnorm_forward(ff::TypedPtr(y32.data()), rstd16.data(), x.data(), w.data(), N, C, 1e-5f);
  EXPECT_EQ(std::memcmp(y.data(), y32.data(), y.size() * sizeof(float)), 0);
}

TEST(ActStore, SwigluWritesTheRoundedBitsOfItsFp32Output) {
  const int N = 11, F = 53;
  auto gu = to_float(randn(size_t(N) * 2 * F, 3, 4.0));
  gu[7] = std::numeric_limits<float>::quiet_NaN();  // NaN stays NaN
  gu[size_t(2) * 2 * F + F + 1] = 1e38f;            // up huge: inf in f16, finite in bf16
  std::vector<float> h(size_t(N) * F);
  ff::swiglu_forward(h.data(), gu.data(), N, F);
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    std::vector<uint16_t> h16(h.size());
    ff::swiglu_forward(ff::TypedPtr(h16.data(), t), gu.data(), N, F);
    EXPECT_EQ(h16, rounded(h, t)) << ff::dtype_name(t);
  }
}

// gate_up stored 16-bit: SwiGLU forward and backward read it widened, exactly the fp32 kernels on
// the widened values (so a recomputed h equals the forward's, which read the same rounded gate_up).
TEST(ActStore, SwigluReadingA16BitGateUpIsTheFp32KernelOnTheWidenedValues) {
  const int N = 9, F = 45;
  const auto gu = to_float(randn(size_t(N) * 2 * F, 7, 3.0));
  const auto dh = to_float(randn(size_t(N) * F, 8, 1.0));
  for (ff::DType t : {ff::DType::bf16, ff::DType::f16}) {
    const auto gu16 = rounded(gu, t);
    std::vector<float> wide(gu.size());
    ff::convert_to_f32(wide.data(), ff::ConstTypedPtr(gu16.data(), t), wide.size());
    std::vector<float> h_ref(size_t(N) * F), d_ref(gu.size()), d16(gu.size());
    ff::swiglu_forward(h_ref.data(), wide.data(), N, F);
    std::vector<uint16_t> h16(h_ref.size());
    ff::swiglu_forward(ff::TypedPtr(h16.data(), t), ff::ConstTypedPtr(gu16.data(), t), N, F);
    EXPECT_EQ(h16, rounded(h_ref, t)) << ff::dtype_name(t);
    ff::swiglu_backward(d_ref.data(), dh.data(), wide.data(), N, F);
    ff::swiglu_backward(d16.data(), dh.data(), ff::ConstTypedPtr(gu16.data(), t), N, F);
    EXPECT_EQ(std::memcmp(d_ref.data(), d16.data(), d16.size() * 4), 0) << ff::dtype_name(t);
    // Its output gradient written 16-bit: the fp32 one rounded.
    std::vector<uint16_t> dgu16(gu.size());
    ff::swiglu_backward(ff::TypedPtr(dgu16.data(), t), dh.data(), ff::ConstTypedPtr(gu16.data(), t), N, F);
    EXPECT_EQ(dgu16, rounded(d_ref, t)) << ff::dtype_name(t);
  }
}

// The three GEMMs of a linear layer in a bf16 run, x (N, in) given fp32 (rounded inside) or
// stored bf16: every output bitwise the same.
TEST(ActStore, GemmsReadingAStoredBf16OperandMatchRoundingInside) {
  const ff::GemmContext bf16{.input_dtype = ff::DType::bf16};
  const int N = 37, in = 48, out = 40;
  const auto x = to_float(randn(size_t(N) * in, 4, 1.0));
  const auto W = to_float(randn(size_t(out) * in, 5, 0.1));
  const auto dy = to_float(randn(size_t(N) * out, 6, 1.0));
  const auto x16 = rounded(x, ff::DType::bf16);
  const ff::ConstTypedPtr stored(x16.data(), ff::DType::bf16);

  std::vector<float> y_a(size_t(N) * out), y_b(y_a.size());
  ff::gemm_run_precision(bf16, false, true, N, out, in, 1.0f, x.data(), in, W.data(), in, 0.0f, y_a.data(), out);
  ff::gemm_run_precision(bf16, false, true, N, out, in, 1.0f, stored, in, W.data(), in, 0.0f, y_b.data(), out);
  EXPECT_EQ(std::memcmp(y_a.data(), y_b.data(), y_a.size() * 4), 0) << "forward";

  std::vector<float> dx_a(x.size()), dx_b(x.size()), dW_a(W.size(), 0.5f), dW_b(W.size(), 0.5f);
  ff::linear_backward_run_precision(bf16, dx_a.data(), dW_a.data(), dy.data(), x.data(), W.data(), N, in, out);
  ff::linear_backward_run_precision(bf16, dx_b.data(), dW_b.data(), dy.data(), stored, W.data(), N, in, out);
  EXPECT_EQ(std::memcmp(dx_a.data(), dx_b.data(), dx_a.size() * 4), 0) << "dgrad";
  EXPECT_EQ(std::memcmp(dW_a.data(), dW_b.data(), dW_a.size() * 4), 0) << "wgrad";
  // dy arriving 16-bit (gate/up's, from SwiGLU's backward) as well: the same bits again.
  const auto dy16 = rounded(dy, ff::DType::bf16);
  std::vector<float> dx_e(x.size()), dW_e(W.size(), 0.5f);
  ff::linear_backward_run_precision(bf16, dx_e.data(), dW_e.data(), ff::ConstTypedPtr(dy16.data(), ff::DType::bf16),
                                    stored, W.data(), N, in, out);
  EXPECT_EQ(std::memcmp(dx_a.data(), dx_e.data(), dx_a.size() * 4), 0) << "dgrad, dy stored";
  EXPECT_EQ(std::memcmp(dW_a.data(), dW_e.data(), dW_a.size() * 4), 0) << "wgrad, dy stored";

  std::vector<float> dW_c(W.size(), 0.5f), dW_d(W.size(), 0.5f);
  ff::accumulate_weight_grad(bf16, dW_c.data(), dy.data(), x.data(), N, in, out);
  ff::accumulate_weight_grad(bf16, dW_d.data(), dy.data(), stored, N, in, out);
  EXPECT_EQ(std::memcmp(dW_c.data(), dW_d.data(), dW_c.size() * 4), 0) << "wgrad alone";
  EXPECT_EQ(std::memcmp(dW_a.data(), dW_c.data(), dW_a.size() * 4), 0) << "the two wgrad paths";
  // And the rounding is real: the fp32 GEMM of the same operands differs.
  const ff::GemmContext fp32;
  std::vector<float> y_f(y_a.size());
  ff::gemm_run_precision(fp32, false, true, N, out, in, 1.0f, x.data(), in, W.data(), in, 0.0f, y_f.data(), out);
  EXPECT_NE(std::memcmp(y_a.data(), y_f.data(), y_a.size() * 4), 0);
}

}  // namespace
