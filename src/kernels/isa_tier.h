// Internal to the kernels layer: the ISA tier the code now being compiled targets, as a level
// (FF_ISA_LEVEL: 0 the build's own target below AVX-512, 1 AVX-512 F/BW/CD/DQ/VL as x86-64-v4
// has it, 2 that plus AVX512-BF16; the numbers of KernelIsa, cpu_isa.h) and a namespace name
// (FF_ISA_TAG). The headers whose inline code depends on the ISA (simd.h, the attention tiles)
// put it in an inline namespace of that name, so the copies one binary holds for two tiers are
// different symbols and the linker never merges a tier's code into another tier's caller.
//
// The build's own target is read from the compiler's __AVX512*__ macros. A tiers/*.cpp file sets
// FF_TIER_TARGET_LEVEL beside its `#pragma GCC target` (which does not redefine those macros for
// the C++ preprocessor in every GCC) and includes this again: no include guard, on purpose.
#undef FF_ISA_LEVEL
#undef FF_ISA_TAG
#if defined(FF_TIER_TARGET_LEVEL)
#define FF_ISA_LEVEL FF_TIER_TARGET_LEVEL
#if FF_TIER_TARGET_LEVEL == 2
#define FF_ISA_TAG isa_avx512_bf16
#else
#define FF_ISA_TAG isa_avx512
#endif
#elif defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
#if defined(__AVX512BF16__)
#define FF_ISA_LEVEL 2
#define FF_ISA_TAG isa_avx512_bf16
#else
#define FF_ISA_LEVEL 1
#define FF_ISA_TAG isa_avx512
#endif
#else
#define FF_ISA_LEVEL 0
#define FF_ISA_TAG isa_base
#endif
