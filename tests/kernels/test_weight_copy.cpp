// The once-per-step 16-bit weight copy: a GEMM that reads its weight from the copy gives exactly
// the bits of the GEMM that rounds the fp32 weight on the call; the copy really is what is read
// (a stale copy shows in the product until it is invalidated); operands outside it are rounded per
// call; it costs 2 bytes per element in the ledger's params category.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "check.h"
#include "core/memory.h"
#include "kernels/gemm_precision.h"
#include "kernels/weight_copy.h"

namespace {

using fftest::randn;
using fftest::to_float;

// y(N,out) = x W^T and dx(N,in) = dy W in the context's GEMM precision.
struct Products {
  std::vector<float> y, dx;
};
Products forward_and_dgrad(const ff::GemmContext& g, const std::vector<float>& x, const float* W,
                           const std::vector<float>& dy, int N, int in, int out) {
  Products p{std::vector<float>(size_t(N) * out), std::vector<float>(size_t(N) * in)};
  ff::gemm_run_precision(g, false, true, N, out, in, 1.0f, x.data(), in, W, in, 0.0f, p.y.data(), out);
  ff::gemm_run_precision(g, false, false, N, in, out, 1.0f, dy.data(), out, W, in, 0.0f, p.dx.data(), in,
                         ff::GemmRole::dgrad);
  return p;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(WeightCopy, ReadThroughTheCopyIsBitwiseThePerCallRounding) {
  ff::GemmContext bf16{.input_dtype = ff::DType::bf16};
  const int N = 37, in = 96, out = 80;
  // Two weights in one parameter buffer; the second is the one multiplied (an offset into a range).
  std::vector<float> params = to_float(randn(size_t(2) * out * in, 1));
  const float* W = params.data() + size_t(out) * in;
  const auto x = to_float(randn(size_t(N) * in, 2)), dy = to_float(randn(size_t(N) * out, 3));
  const Products per_call = forward_and_dgrad(bf16, x, W, dy, N, in, out);

  const auto before = ff::MemoryLedger::instance().snapshot().current[int(ff::MemCategory::params)];
  ff::WeightCopy copy({{params.data(), params.size()}}, ff::DType::bf16);
  bf16.twins.push_back(&copy);
  EXPECT_EQ(ff::MemoryLedger::instance().snapshot().current[int(ff::MemCategory::params)] - before,
            int64_t(params.size() * 2));
  EXPECT_EQ(bf16.twin_of(W, size_t(out) * in, ff::DType::bf16), nullptr);  // not yet refreshed
  {
    const ff::FreshWeightCopy fresh(&copy);
    ASSERT_NE(bf16.twin_of(W, size_t(out) * in, ff::DType::bf16), nullptr);
    EXPECT_EQ(bf16.twin_of(W, size_t(out) * in, ff::DType::f16), nullptr);       // another dtype
    EXPECT_EQ(bf16.twin_of(W + 1, size_t(out) * in, ff::DType::bf16), nullptr);  // runs past the end
    const Products through_copy = forward_and_dgrad(bf16, x, W, dy, N, in, out);
    EXPECT_TRUE(bitwise_equal(through_copy.y, per_call.y));
    EXPECT_TRUE(bitwise_equal(through_copy.dx, per_call.dx));

    // Change the fp32 weight without refreshing: the products still read the copy (the old
    // weight), which proves the copy is what the GEMM reads.
    std::vector<float> saved(params);
    for (float& w : params) w *= 2.0f;
    const Products stale = forward_and_dgrad(bf16, x, W, dy, N, in, out);
    EXPECT_TRUE(bitwise_equal(stale.y, per_call.y));
    copy.refresh();  // the doubled weights: every product doubles exactly (a power of 2)
    const Products doubled = forward_and_dgrad(bf16, x, W, dy, N, in, out);
    for (size_t i = 0; i < doubled.y.size(); ++i) ASSERT_EQ(doubled.y[i], 2.0f * per_call.y[i]);
    params = saved;
  }
  // Out of the scope the copy is stale: the GEMM rounds the (restored) fp32 weight itself.
  EXPECT_EQ(bf16.twin_of(W, size_t(out) * in, ff::DType::bf16), nullptr);
  EXPECT_EQ(copy.refreshes(), 2u);
}

// The fused linear backward (dy rounded once for dgrad and wgrad) against the two products made
// apart, bitwise, in bf16 with and without a weight copy and in fp32; a null dW skips wgrad.
TEST(WeightCopy, FusedLinearBackwardIsBitwiseTheTwoProducts) {
  const int N = 29, in = 48, out = 72;
  std::vector<float> W = to_float(randn(size_t(out) * in, 4));
  const auto x = to_float(randn(size_t(N) * in, 5)), dy = to_float(randn(size_t(N) * out, 6));
  const auto dw0 = to_float(randn(size_t(out) * in, 7));
  for (ff::DType t : {ff::DType::bf16, ff::DType::f32})
    for (bool with_copy : {false, true}) {
      if (t == ff::DType::f32 && with_copy) continue;
      ff::GemmContext g{.input_dtype = t};
      std::unique_ptr<ff::WeightCopy> copy;
      if (with_copy)
        copy = std::make_unique<ff::WeightCopy>(std::vector<ff::MirroredRange>{{W.data(), W.size()}}, t);
      if (copy) g.twins.push_back(copy.get());
      const ff::FreshWeightCopy fresh(copy.get());
      std::vector<float> dx_apart(size_t(N) * in), dw_apart(dw0);
      ff::gemm_run_precision(g, false, false, N, in, out, 1.0f, dy.data(), out, W.data(), in, 0.0f,
                             dx_apart.data(), in, ff::GemmRole::dgrad);
      ff::accumulate_weight_grad(g, dw_apart.data(), dy.data(), x.data(), N, in, out);
      std::vector<float> dx_fused(size_t(N) * in, 7.0f), dw_fused(dw0);
      ff::linear_backward_run_precision(g, dx_fused.data(), dw_fused.data(), dy.data(), x.data(), W.data(), N,
                                        in, out);
      EXPECT_TRUE(bitwise_equal(dx_fused, dx_apart)) << ff::dtype_name(t) << " copy " << with_copy;
      EXPECT_TRUE(bitwise_equal(dw_fused, dw_apart)) << ff::dtype_name(t) << " copy " << with_copy;
      std::vector<float> dx_only(size_t(N) * in);
      ff::linear_backward_run_precision(g, dx_only.data(), nullptr, dy.data(), x.data(), W.data(), N, in, out);
      EXPECT_TRUE(bitwise_equal(dx_only, dx_apart));
    }
}

TEST(WeightCopy, Fp32RunsAndWrongDtypesAreRefused) {
  std::vector<float> w(16, 1.0f);
  EXPECT_THROW(ff::WeightCopy({{w.data(), w.size()}}, ff::DType::f32), std::invalid_argument);
  // fp32 GEMMs never look at a copy, even one in their context (the default path is the fp32
  // gemm unchanged).
  ff::WeightCopy copy({{w.data(), w.size()}}, ff::DType::bf16);
  copy.refresh();
  ff::GemmContext f32;
  f32.twins.push_back(&copy);
  std::vector<float> x(4, 1.0f), y(4);
  w[0] = 1.0f + 1.0f / 1024;  // not a bf16 value: an fp32 product shows it
  ff::gemm_run_precision(f32, false, true, 1, 4, 4, 1.0f, x.data(), 4, w.data(), 4, 0.0f, y.data(), 4);
  EXPECT_EQ(y[0], 4.0f + 1.0f / 1024);
}

}  // namespace
