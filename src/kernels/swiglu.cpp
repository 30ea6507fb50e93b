#include "kernels/swiglu.h"

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/round_store.h"
#include "kernels/simd.h"
#include "kernels/tier_pick.h"

namespace ff {

// The fp32 kernels of one ISA tier: this file compiled for the build's target, and again by
// tiers/swiglu_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct SwiGluTier {
  void (*forward)(TypedPtr h, ConstTypedPtr gate_up, int N, int F);
  void (*forward_rounding)(TypedPtr h, TypedPtr gate_up_kept, const float* gate_up, int N, int F);
  void (*backward)(TypedPtr d_gate_up, const float* dh, ConstTypedPtr gate_up, int N, int F);
};

namespace FF_ISA_TAG {
namespace {

// h in T, or in a 16-bit type through Store; gate_up in T, or 16-bit widened through Load
// (round_store.h): the same arithmetic in T either way. One row; every forward runs this body.
template <class T, class Store, class Load>
FF_WIDE inline void forward_row(typename Store::type* hr, const typename Load::type* g, int F) {
  const typename Load::type* u = g + F;
#pragma omp simd
  for (int i = 0; i < F; ++i) {
    const T gi = Load::get(g[i]);
    const T sig = T(1) / (T(1) + simd::exp_fast(-gi));
    hr[i] = Store::cast(gi * sig * Load::get(u[i]));
  }
}

template <class T, class Store = detail::StoreSame<T>, class Load = detail::LoadSame<T>>
FF_WIDE void forward(typename Store::type* h, const typename Load::type* gate_up, int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n)
    forward_row<T, Store, Load>(h + static_cast<size_t>(n) * F, gate_up + static_cast<size_t>(n) * 2 * F, F);
}

// The load that widens what Round stored.
template <class Round>
struct LoadOf;
template <>
struct LoadOf<detail::StoreBf16> {
  using type = detail::LoadBf16;
};
template <>
struct LoadOf<detail::StoreF16> {
  using type = detail::LoadF16;
};

// Each fp32 row of gate_up rounded into kept through Round, then the row body reading the kept
// row back (still in L1): the bits of rounding first and running the 16-bit forward after.
template <class Store, class Round>
FF_WIDE void forward_rounding(typename Store::type* h, typename Round::type* kept, const float* gate_up,
                              int N, int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const size_t off = static_cast<size_t>(n) * 2 * F;
    typename Round::type* k = kept + off;
#pragma omp simd
    for (int i = 0; i < 2 * F; ++i) k[i] = Round::cast(gate_up[off + i]);
    forward_row<float, Store, typename LoadOf<Round>::type>(h + static_cast<size_t>(n) * F, k, F);
  }
}

// With s = sigmoid(g): d silu(g)/dg = s (1 + g (1 - s)).
// d_gate_up in T, or rounded to a 16-bit type through Store (the GEMMs it feeds read it so).
template <class T, class Load = detail::LoadSame<T>, class Store = detail::StoreSame<T>>
FF_WIDE void backward(typename Store::type* d_gate_up, const T* dh, const typename Load::type* gate_up, int N,
                      int F) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const size_t off2 = static_cast<size_t>(n) * 2 * F;
    const typename Load::type* g = gate_up + off2;
    const typename Load::type* u = g + F;
    typename Store::type* dg = d_gate_up + off2;
    typename Store::type* du = dg + F;
    const T* d = dh + static_cast<size_t>(n) * F;
#pragma omp simd
    for (int i = 0; i < F; ++i) {
      const T gi = Load::get(g[i]), ui = Load::get(u[i]);
      const T sig = T(1) / (T(1) + simd::exp_fast(-gi));
      dg[i] = Store::cast(d[i] * ui * sig * (T(1) + gi * (T(1) - sig)));
      du[i] = Store::cast(d[i] * gi * sig);
    }
  }
}

void glu_forward(TypedPtr h, ConstTypedPtr gate_up, int N, int F) {
  detail::with_store(h, [&]<class Store>(typename Store::type* out) {
    detail::with_load(gate_up, [&]<class Load>(const typename Load::type* in) {
      forward<float, Store, Load>(out, in, N, F);
    });
  });
}
void glu_forward_rounding(TypedPtr h, TypedPtr gate_up_kept, const float* gate_up, int N, int F) {
  detail::with_store(h, [&]<class Store>(typename Store::type* out) {
    detail::with_store(gate_up_kept, [&]<class Round>(typename Round::type* kept) {
      if constexpr (!std::is_same_v<Round, detail::StoreF32>)
        forward_rounding<Store, Round>(out, kept, gate_up, N, F);
    });
  });
}
void glu_backward(TypedPtr d_gate_up, const float* dh, ConstTypedPtr gate_up, int N, int F) {
  detail::with_store(d_gate_up, [&]<class Store>(typename Store::type* out) {
    detail::with_load(gate_up, [&]<class Load>(const typename Load::type* in) {
      backward<float, Load, Store>(out, dh, in, N, F);
    });
  });
}

}  // namespace

extern const SwiGluTier swiglu_tier;
const SwiGluTier swiglu_tier = {&glu_forward, &glu_forward_rounding, &glu_backward};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(SwiGluTier, swiglu_tier)

void swiglu_forward(float* h, const float* gate_up, int N, int F) {
  swiglu_tier_for_cpu().forward(TypedPtr(h), ConstTypedPtr(gate_up), N, F);
}
void swiglu_forward(TypedPtr h, ConstTypedPtr gate_up, int N, int F) { swiglu_tier_for_cpu().forward(h, gate_up, N, F); }
void swiglu_forward_rounding(TypedPtr h, TypedPtr gate_up_kept, const float* gate_up, int N, int F) {
  if (gate_up_kept.dtype() == DType::f32)
    throw std::logic_error("swiglu_forward_rounding: the kept gate_up must be 16-bit");
  swiglu_tier_for_cpu().forward_rounding(h, gate_up_kept, gate_up, N, F);
}
void swiglu_backward(TypedPtr d_gate_up, const float* dh, ConstTypedPtr gate_up, int N, int F) {
  swiglu_tier_for_cpu().backward(d_gate_up, dh, gate_up, N, F);
}
void swiglu_backward(float* d_gate_up, const float* dh, const float* gate_up, int N, int F) {
  swiglu_tier_for_cpu().backward(TypedPtr(d_gate_up), dh, ConstTypedPtr(gate_up), N, F);
}
void swiglu_forward(double* h, const double* gate_up, int N, int F) { FF_ISA_TAG::forward<double>(h, gate_up, N, F); }
void swiglu_backward(double* d_gate_up, const double* dh, const double* gate_up, int N, int F) {
  FF_ISA_TAG::backward<double>(d_gate_up, dh, gate_up, N, F);
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
