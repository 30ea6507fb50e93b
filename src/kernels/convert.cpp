#include "kernels/convert.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"
#include "kernels/tier_pick.h"

namespace ff {

// The bf16 conversions of one ISA tier: this file compiled for the build's target, and again by
// tiers/convert_avx512.cpp where that target lacks AVX-512 (cpu_isa.h, KernelIsa).
struct ConvertTier {
  void (*to_bf16)(uint16_t* dst, const float* src, size_t n);
  void (*from_bf16)(float* dst, const uint16_t* src, size_t n);
};

namespace {
// Below this many elements a parallel region costs more than the conversion (~1 ns/element).
constexpr size_t kParallelMin = size_t(1) << 16;
}  // namespace

namespace FF_ISA_TAG {
namespace {

// The integer form of f32_to_bf16 on whole lanes: GCC vectorises it to AVX-512 compares and
// blends. The hardware instruction (vcvtne2ps2bf16) would flush subnormal inputs to zero, which
// the scalar conversion (and PyTorch) do not do, so it is not used.
void to_bf16(uint16_t* dst, const float* src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    dst[i] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

void from_bf16(float* dst, const uint16_t* src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(src[i]) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

}  // namespace

extern const ConvertTier convert_tier;
const ConvertTier convert_tier = {&to_bf16, &from_bf16};
}  // namespace FF_ISA_TAG

#if !defined(FF_KERNEL_TIER_TU)  // the entry points, once: in the build's own compilation
FF_TIER_PICK(ConvertTier, convert_tier)

namespace {

// F16C/AVX-512's vcvtps2ph rounds to nearest even, keeps subnormals and quiets NaNs exactly as
// f32_to_f16 does (the masked forms: GCC 12's unmasked ones warn on an uninitialised
// pass-through). Compiled for AVX-512 whatever the build targets and run where the CPU has it
// (kernel_isa); each returns how many leading elements it converted, the scalar functions do the rest.
__attribute__((target("avx512f"))) size_t to_f16_avx512(uint16_t* dst, const float* src, size_t n) {
  const size_t blocks = n / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t b = 0; b < blocks; ++b) {
    const __m512 v = _mm512_loadu_ps(src + b * 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + b * 16),
                        _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  return blocks * 16;
}

__attribute__((target("avx512f"))) size_t from_f16_avx512(float* dst, const uint16_t* src, size_t n) {
  const size_t blocks = n / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (size_t b = 0; b < blocks; ++b) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + b * 16));
    _mm512_storeu_ps(dst + b * 16, _mm512_maskz_cvtph_ps(0xffff, h));
  }
  return blocks * 16;
}

bool f16_avx512_runs() { return build_kernel_isa() >= KernelIsa::avx512 || kernel_isa() >= KernelIsa::avx512; }

void to_f16(uint16_t* dst, const float* src, size_t n) {
  const size_t done = f16_avx512_runs() ? to_f16_avx512(dst, src, n) : 0;
  for (size_t i = done; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void from_f16(float* dst, const uint16_t* src, size_t n) {
  const size_t done = f16_avx512_runs() ? from_f16_avx512(dst, src, n) : 0;
  for (size_t i = done; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace

void convert_from_f32(TypedPtr dst, const float* src, size_t n) {
  switch (dst.dtype()) {
    case DType::f32: std::memcpy(dst.data(), src, n * sizeof(float)); return;
    case DType::bf16: convert_tier_for_cpu().to_bf16(static_cast<uint16_t*>(dst.data()), src, n); return;
    case DType::f16: to_f16(static_cast<uint16_t*>(dst.data()), src, n); return;
  }
}

void convert_to_f32(float* dst, ConstTypedPtr src, size_t n) {
  switch (src.dtype()) {
    case DType::f32: std::memcpy(dst, src.data(), n * sizeof(float)); return;
    case DType::bf16: convert_tier_for_cpu().from_bf16(dst, static_cast<const uint16_t*>(src.data()), n); return;
    case DType::f16: from_f16(dst, static_cast<const uint16_t*>(src.data()), n); return;
  }
}

void round_through(float* x, size_t n, DType t) {
  if (t == DType::f32) return;
  // In chunks through a stack buffer: no allocation, and each chunk stays in L1.
  constexpr size_t kChunk = 4096;
  uint16_t tmp[kChunk];
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t m = n - i < kChunk ? n - i : kChunk;
    convert_from_f32(TypedPtr(tmp, t), x + i, m);
    convert_to_f32(x + i, ConstTypedPtr(tmp, t), m);
  }
}

#endif  // !FF_KERNEL_TIER_TU

}  // namespace ff
