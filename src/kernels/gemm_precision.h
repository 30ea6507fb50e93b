#pragma once
// The precision the model's GEMMs read their inputs in, for the whole process (like the OpenMP
// thread count, it is a property of the run: `precision = bf16` sets it once at start-up). The
// model's linear helpers (model/linear.h) take fp32 activations and weights and, when the run is
// not fp32, round both operands to the 16-bit type on the way into the GEMM and accumulate in
// fp32: what PyTorch's autocast does around a matmul. Norms, softmax, RoPE and the loss never go
// through here, so they stay fp32. With f32 (the default) every call is the fp32 GEMM unchanged.
#include "core/dtype.h"

namespace ff {

void set_gemm_input_dtype(DType t);
DType gemm_input_dtype();
// Experimental fp8 (precision = fp8): GEMM inputs fake-quantised to e4m3 (activations, weights)
// or e5m2 (gradients) with a per-tensor scale from the tensor's own amax (current scaling; the
// delayed recipe of kernels/fp8.h needs a tensor identity the GEMM does not have yet).
void set_gemm_fp8(bool on);
bool gemm_fp8();
// Which operand of a linear layer's GEMM is a gradient (fp8 rounds those to e5m2).
enum class GemmRole { forward, dgrad, wgrad };

// Sets the GEMM input dtype for a scope and restores the previous one (tests, benchmarks).
class GemmInputDtypeScope {
 public:
  explicit GemmInputDtypeScope(DType t) : saved_(gemm_input_dtype()) { set_gemm_input_dtype(t); }
  ~GemmInputDtypeScope() { set_gemm_input_dtype(saved_); }
  GemmInputDtypeScope(const GemmInputDtypeScope&) = delete;
  GemmInputDtypeScope& operator=(const GemmInputDtypeScope&) = delete;

 private:
  DType saved_;
};

// The fp32 gemm of gemm.h with A and B first rounded to gemm_input_dtype() (their stored extents
// converted into per-thread scratch), C fp32. f32: exactly gemm(). Each of A and B is converted
// once per call: a weight costs out x in conversions against the GEMM's 2 x N x out x in FLOPs.
// An activation A already stored 16-bit (model/activations.h) is read as it is, and its type is
// the GEMM's: it was rounded once, by the kernel that wrote it.
void gemm_run_precision(bool trans_a, bool trans_b, int M, int N, int K, float alpha, ConstTypedPtr A, int lda,
                        const float* B, int ldb, float beta, float* C, int ldc, GemmRole role = GemmRole::forward);
// dW(out,in) += dy^T x in the run's precision (f32: linear_backward's operand order for tall W);
// x may be stored 16-bit, as above.
void accumulate_weight_grad(float* dW, const float* dy, ConstTypedPtr x, int N, int in, int out);
// A linear layer's backward: dx(N,in) = dy(N,out) W (overwriting), then, when dW is not null,
// dW(out,in) += dy^T x. A 16-bit run rounds dy once for both products instead of once per
// product (not at all when dy arrives 16-bit already); the results are bitwise those of the two
// calls made apart.
void linear_backward_run_precision(float* dx, float* dW, ConstTypedPtr dy, ConstTypedPtr x, const float* W, int N,
                                   int in, int out);
// The type a GEMM with this activation operand runs in: the operand's own when it is stored
// 16-bit, else the run's (gemm_input_dtype()).
DType gemm_dtype_for(ConstTypedPtr activation);

}  // namespace ff
