#pragma once
// The model's GEMMs in the precision their context says (gemm_context.h). The model's linear
// helpers (model/linear.h) take fp32 activations and weights and, when the context's input dtype
// is not fp32, round both operands to the 16-bit type on the way into the GEMM and accumulate in
// fp32: what PyTorch's autocast does around a matmul. With f32 (the default context) every call is
// the fp32 GEMM unchanged.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/gemm_context.h"

namespace ff {

// Which operand of a linear layer's GEMM is a gradient (fp8 rounds those to e5m2).
enum class GemmRole { forward, dgrad, wgrad };

// A linear layer's weight (or, writable, its gradient) as a GEMM operand: its values, and which
// model parameter it is: `at`, the element of the model's flat parameter layout
// (model/parameters.h) where it starts, the same whichever buffer holds it (a replica, a ZeRO-3
// gather, a gradient staging buffer); -1 for a matrix that is no model parameter (a test's, a
// benchmark's, the planner's). fp8's delayed scales are the parameter's (fp8_recipe.h).
template <class T>
struct ParamOperand {
  T* data = nullptr;
  int64_t at = -1;
  // Implicit from a bare pointer: a matrix that is no parameter.
  ParamOperand(T* d = nullptr, int64_t a = -1) : data(d), at(a) {}
};
using WeightRef = ParamOperand<const float>;
using WeightGradRef = ParamOperand<float>;

// The fp32 gemm of gemm.h with A and B first rounded to g.input_dtype (their stored extents
// converted into per-thread scratch), C fp32. f32: exactly gemm(). Each of A and B is converted
// once per call: a weight costs out x in conversions against the GEMM's 2 x N x out x in FLOPs.
// An activation A already stored 16-bit (model/activations.h) is read as it is, and its type is
// the GEMM's: it was rounded once, by the kernel that wrote it. `role` and `param_at` say which
// GEMM of which linear layer this is: the weight's WeightRef::at (-1: none), for fp8's scales.
void gemm_run_precision(const GemmContext& g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                        ConstTypedPtr A, int lda, const float* B, int ldb, float beta, float* C, int ldc,
                        GemmRole role = GemmRole::forward, int64_t param_at = -1);
// C16(M,N) = A(M,K) W^T stored in C16's 16-bit type by the product itself: a forward product whose
// output is kept rounded (gate_up, which SwiGLU reads 16-bit). Where the weight is packed
// (packed_weights.h), or the bf16 products run on fivefold's tile GEMM (gemm_amx.h), the product
// rounds its fp32 accumulators as it stores them, so no fp32 C is written and read back: true. Else (no packed twin, an fp32 A) it computes the fp32 product into
// `staging` (M x N floats) by gemm_run_precision and leaves C16 to the caller, whose next kernel
// can round it as it reads it: false. The same bits either way (but a denormal result, zero when
// the product stores it). A and W as gemm_run_precision's forward product; the context's
// precision must be C16's type (a 16-bit one).
bool gemm_forward_rounded(const GemmContext& g, TypedPtr C16, ConstTypedPtr A, WeightRef W, int M, int N, int K,
                          float* staging);
// dW(out,in) += dy^T x in the context's precision (f32: linear_backward's operand order for tall
// W); x may be stored 16-bit, as above.
void accumulate_weight_grad(const GemmContext& g, WeightGradRef dW, const float* dy, ConstTypedPtr x, int N,
                            int in, int out);
// A linear layer's backward: dx(N,in) = dy(N,out) W (overwriting), then, when dW is not null,
// dW(out,in) += dy^T x (dW is W's gradient: the same parameter). A 16-bit context rounds dy once
// for both products instead of once per product (not at all when dy arrives 16-bit already); the
// results are bitwise those of the two calls made apart.
void linear_backward_run_precision(const GemmContext& g, float* dx, float* dW, ConstTypedPtr dy, ConstTypedPtr x,
                                   WeightRef W, int N, int in, int out);
// The type a GEMM with this activation operand runs in: the operand's own when it is stored
// 16-bit, else the context's.
DType gemm_dtype_for(const GemmContext& g, ConstTypedPtr activation);

}  // namespace ff
