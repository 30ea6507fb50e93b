#include "kernels/swiglu.h"

#include <cstddef>

#include "kernels/round_store.h"
#include "kernels/simd.h"

namespace ff {
namespace {

// h in T, or in a 16-bit type through Store (round_store.h): the same fp32 arithmetic either way.
template <class T, class Store = detail::StoreSame<T>>
FF_WIDE void forward(typename Store::type* h, const T* gate_up, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const T* g = gate_up + static_cast<size_t>(n) * 2 * F;
    const T* u = g + F;
    typename Store::type* hr = h + static_cast<size_t>(n) * F;
#pragma omp simd
    for (int i = 0; i < F; ++i) {
      const T sig = T(1) / (T(1) + simd::exp_fast(-g[i]));
      hr[i] = Store::cast(g[i] * sig * u[i]);
    }
  }
}

// With s = sigmoid(g): d silu(g)/dg = s (1 + g (1 - s)).
template <class T>
FF_WIDE void backward(T* d_gate_up, const T* dh, const T* gate_up, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const size_t off2 = static_cast<size_t>(n) * 2 * F;
    const T* g = gate_up + off2;
    const T* u = g + F;
    T* dg = d_gate_up + off2;
    T* du = dg + F;
    const T* d = dh + static_cast<size_t>(n) * F;
#pragma omp simd
    for (int i = 0; i < F; ++i) {
      const T sig = T(1) / (T(1) + simd::exp_fast(-g[i]));
      dg[i] = d[i] * u[i] * sig * (T(1) + g[i] * (T(1) - sig));
      du[i] = d[i] * g[i] * sig;
    }
  }
}

}  // namespace

void swiglu_forward(float* h, const float* gate_up, int N, int F) { forward(h, gate_up, N, F); }
void swiglu_forward(TypedPtr h, const float* gate_up, int N, int F) {
  detail::with_store(h, [&]<class Store>(typename Store::type* out) { forward<float, Store>(out, gate_up, N, F); });
}
void swiglu_backward(float* d_gate_up, const float* dh, const float* gate_up, int N, int F) {
  backward(d_gate_up, dh, gate_up, N, F);
}
void swiglu_forward(double* h, const double* gate_up, int N, int F) { forward(h, gate_up, N, F); }
void swiglu_backward(double* d_gate_up, const double* dh, const double* gate_up, int N, int F) {
  backward(d_gate_up, dh, gate_up, N, F);
}

}  // namespace ff
