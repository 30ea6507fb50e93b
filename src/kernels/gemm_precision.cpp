#include "kernels/gemm_precision.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/convert.h"
#include "kernels/fp8.h"
#include "kernels/fp8_recipe.h"
#include "kernels/gemm.h"
#include "kernels/gemm_amx.h"
#include "kernels/scratch.h"
#include "kernels/wgrad_rows.h"

namespace ff {
namespace {

// op(A) op(B) with both operands fake-quantised to fp8, each scaled so its amax maps to the
// format's largest value; A is a gradient (e5m2) in the backward GEMMs.
// `recipe` null: current scaling, each operand by its own amax.
void fp8_gemm(Fp8Recipe* recipe, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
              int lda, const float* B, int ldb, float beta, float* C, int ldc, GemmRole role, int64_t param_at) {
  const size_t na = size_t(trans_a ? K : M) * lda, nb = size_t(trans_b ? N : K) * ldb;
  const size_t b_at = (na + 15) / 16 * 16;
  float* a = detail::thread_scratch<float>(b_at + nb);
  float* b = a + b_at;
  auto quantise = [](float* dst, const float* src, size_t n, Fp8Format f) {
    float amax = 0.0f;
    for (size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
    std::copy(src, src + n, dst);
    fake_quantise_fp8(dst, n, amax > 0.0f && std::isfinite(amax) ? fp8_max(f) / amax : 1.0f, f);
  };
  const Fp8Format fa = role == GemmRole::forward ? Fp8Format::e4m3 : Fp8Format::e5m2;
  if (recipe) {  // delayed scaling: the layer's tensors by its weight's parameter (fp8_recipe.h)
    std::copy(A, A + na, a);
    recipe->quantise(param_at, role, 0, fa, a, na);
    std::copy(B, B + nb, b);
    recipe->quantise(param_at, role, 1, Fp8Format::e4m3, b, nb);
  } else {
    quantise(a, A, na, fa);
    quantise(b, B, nb, Fp8Format::e4m3);
  }
  gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, C, ldc);
}
// op(A) op(W) with A 16-bit and W a dense fp32 weight whose step copy has a twin: run on the
// twin's packed copy (packed_weights.h) when there is one. False: the caller multiplies plainly.
bool packed_weight_product(const GemmContext& g, bool trans_a, bool trans_w, int M, int N, int K, float alpha,
                           ConstTypedPtr a, int lda, const float* W, int ldw, float beta, float* C, int ldc) {
  if (trans_a || ldw != (trans_w ? K : N)) return false;  // a transposed activation, or a slice of W
  const PackedProduct p{trans_w, M, N, K, alpha, beta, a.data(), lda, C, ldc};
  return g.multiply_packed(W, size_t(K) * N, a.dtype(), p);
}
// dW(out,in) += dy^T x over 16-bit dy (N,out) and x (N,in): dW's rows dealt out to the threads
// (wgrad_rows.h) where the context lets it and it applies, else one product over both threads
// (oneDNN's, or the tile GEMM's: wgrad_rows runs oneDNN primitives).
void weight_grad_16bit(const GemmContext& g, float* dW, ConstTypedPtr dy16, ConstTypedPtr x16, int N, int in,
                       int out) {
  if (g.wgrad_rows && !gemm_on_fivefold_tiles(dy16.dtype()) && wgrad_rows_per_thread(out, in, N, dy16, out, x16, in, 1.0f, dW, in)) {
    if (g.counts) g.counts->wgrad_rows_products.fetch_add(1);
    return;
  }
  gemm(true, false, out, in, N, 1.0f, dy16, out, x16, in, 1.0f, TypedPtr(dW), in);
}
}  // namespace

DType gemm_dtype_for(const GemmContext& g, ConstTypedPtr activation) {
  return activation.dtype() != DType::f32 ? activation.dtype() : g.input_dtype;
}

void gemm_run_precision(const GemmContext& g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                        ConstTypedPtr A, int lda, const float* B, int ldb, float beta, float* C, int ldc,
                        GemmRole role, int64_t param_at) {
  const DType t = gemm_dtype_for(g, A);
  if (g.fp8 && M > 0 && N > 0) {  // fp8 runs store every activation fp32 (model/activations.h)
    fp8_gemm(g.fp8_recipe, trans_a, trans_b, M, N, K, alpha, A.f32(), lda, B, ldb, beta, C, ldc, role, param_at);
    return;
  }
  if (t == DType::f32) {
    gemm(trans_a, trans_b, M, N, K, alpha, A.f32(), lda, B, ldb, beta, C, ldc);
    return;
  }
  if (M <= 0 || N <= 0) return;
  // The stored extents, padding included: op(A) is (M, K), so A holds (trans ? K : M) rows of lda.
  const size_t na = size_t(trans_a ? K : M) * lda, nb = size_t(trans_b ? N : K) * ldb;
  // B is the weight in the forward and dgrad products: the step's rounded copy when there is one
  // (weight_copy.h; the same rounding, so the same bits), else rounded here like A.
  const void* b_copy = role == GemmRole::wgrad ? nullptr : g.twin_of(B, nb, t);
  // One scratch for whichever need rounding, B starting on a 64-byte boundary (32 halves).
  const bool a_stored = A.dtype() == t;
  const size_t b_at = a_stored ? 0 : (na + 31) / 32 * 32;
  const size_t need = b_copy ? b_at : b_at + nb;
  uint16_t* scratch = need ? detail::thread_scratch<uint16_t>(need) : nullptr;
  const TypedPtr a16(scratch, t), b16(scratch + b_at, t);
  if (!a_stored) convert_from_f32(a16, A.f32(), na);
  if (!b_copy) convert_from_f32(b16, B, nb);
  const ConstTypedPtr a = a_stored ? A : ConstTypedPtr(a16);
  const ConstTypedPtr b = b_copy ? ConstTypedPtr(b_copy, t) : ConstTypedPtr(b16);
  if (b_copy && packed_weight_product(g, trans_a, trans_b, M, N, K, alpha, a, lda, B, ldb, beta, C, ldc)) return;
  gemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, TypedPtr(C), ldc);
}

bool gemm_forward_rounded(const GemmContext& g, TypedPtr C16, ConstTypedPtr A, WeightRef W, int M, int N, int K,
                          float* staging) {
  const DType t = gemm_dtype_for(g, A);
  if (C16.dtype() == DType::f32 || C16.dtype() != t || g.fp8)
    throw std::logic_error(std::string("gemm_forward_rounded: output ") + dtype_name(C16.dtype()) +
                           " in a " + dtype_name(t) + " product; it writes the product's own 16-bit type");
  if (M <= 0 || N <= 0) return true;
  const size_t nw = size_t(N) * K;
  if (A.dtype() == t && gemm_on_fivefold_tiles(t))
    if (const void* w16 = g.twin_of(W.data, nw, t)) {  // the tile GEMM rounds as it stores
      gemm_bf16_on_tiles_rounded(gemm_tiles(), false, true, M, N, K, static_cast<const uint16_t*>(A.data()), K,
                                 static_cast<const uint16_t*>(w16), K, static_cast<uint16_t*>(C16.data()), N);
      return true;
    }
  if (A.dtype() == t && g.twin_of(W.data, nw, t)) {
    PackedProduct p{true, M, N, K, 1.0f, 0.0f, A.data(), K, C16.data(), N};
    p.c_dtype = t;
    if (g.multiply_packed(W.data, nw, t, p)) return true;
  }
  gemm_run_precision(g, false, true, M, N, K, 1.0f, A, K, W.data, K, 0.0f, staging, N, GemmRole::forward, W.at);
  return false;
}

void linear_backward_run_precision(const GemmContext& g, float* dx, float* dW, ConstTypedPtr dy, ConstTypedPtr x,
                                   WeightRef weight, int N, int in, int out) {
  const DType t = gemm_dtype_for(g, x);
  const float* W = weight.data;
  if (t == DType::f32 || g.fp8 || N <= 0) {
    gemm_run_precision(g, false, false, N, in, out, 1.0f, dy.f32(), out, W, in, 0.0f, dx, in, GemmRole::dgrad,
                       weight.at);
    if (dW) accumulate_weight_grad(g, WeightGradRef(dW, weight.at), dy.f32(), x, N, in, out);
    return;
  }
  if (dy.dtype() != DType::f32 && dy.dtype() != t)
    throw std::logic_error(std::string("linear backward: a ") + dtype_name(dy.dtype()) + " output gradient in a " +
                           dtype_name(t) + " GEMM");
  // Scratch: dy (N, out) rounded unless it arrived 16-bit, then W (out, in) unless the step's copy
  // has it, then x (N, in) unless it is stored 16-bit.
  const size_t ny = size_t(N) * out, nw = size_t(out) * in, nx = size_t(N) * in;
  auto up = [](size_t n) { return (n + 31) / 32 * 32; };  // 64-byte boundaries
  const void* w_copy = g.twin_of(W, nw, t);
  const bool x_stored = x.dtype() == t, dy_stored = dy.dtype() == t;
  const size_t w_at = dy_stored ? 0 : up(ny), x_at = w_at + (w_copy ? 0 : up(nw));
  const size_t need = x_at + (dW && !x_stored ? nx : 0);
  uint16_t* scratch = need ? detail::thread_scratch<uint16_t>(need) : nullptr;
  const TypedPtr w16(scratch + w_at, t), x16(scratch + x_at, t);
  const TypedPtr dy_rounded(scratch, t);
  if (!dy_stored) convert_from_f32(dy_rounded, dy.f32(), ny);
  const ConstTypedPtr dy16 = dy_stored ? dy : ConstTypedPtr(dy_rounded);
  if (!w_copy) convert_from_f32(w16, W, nw);
  const ConstTypedPtr w = w_copy ? ConstTypedPtr(w_copy, t) : ConstTypedPtr(w16);
  if (!w_copy || !packed_weight_product(g, false, false, N, in, out, 1.0f, dy16, out, W, in, 0.0f, dx, in))
    gemm(false, false, N, in, out, 1.0f, dy16, out, w, in, 0.0f, TypedPtr(dx), in);
  if (!dW) return;
  if (!x_stored) convert_from_f32(x16, x.f32(), nx);
  weight_grad_16bit(g, dW, dy16, x_stored ? x : ConstTypedPtr(x16), N, in, out);
}

void accumulate_weight_grad(const GemmContext& g, WeightGradRef grad, const float* dy, ConstTypedPtr x, int N,
                            int in, int out) {
  float* dW = grad.data;
  if (gemm_dtype_for(g, x) == DType::f32 && !g.fp8) {
    linear_backward(nullptr, dW, dy, x.f32(), nullptr, N, in, out);
    return;
  }
  const DType t = gemm_dtype_for(g, x);
  if (g.fp8 || x.dtype() != t) {  // x fp32: both operands rounded on the way in
    gemm_run_precision(g, true, false, out, in, N, 1.0f, dy, out, x.f32(), in, 1.0f, dW, in, GemmRole::wgrad,
                       grad.at);
    return;
  }
  // x stored in the GEMM's type: only dy is rounded.
  const size_t ny = size_t(N) * out;
  const TypedPtr dy16(detail::thread_scratch<uint16_t>(ny), t);
  convert_from_f32(dy16, dy, ny);
  weight_grad_16bit(g, dW, ConstTypedPtr(dy16), x, N, in, out);
}

}  // namespace ff
