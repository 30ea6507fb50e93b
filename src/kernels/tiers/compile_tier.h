// Internal to kernels/tiers: compiles the kernel source FF_TIER_SOURCE for the tier FF_TIER_WANTED
// (1 AVX-512, 2 AVX-512 with AVX512-BF16: isa_tier.h's levels), or nothing where the build's own
// target has that tier already (its own compilation of the source is then that tier). The
// source's entry points are left out (FF_KERNEL_TIER_TU): its own compilation dispatches to the
// tier objects this defines.
#include "kernels/tiers/tier_prelude.h"

#if FF_ISA_LEVEL < FF_TIER_WANTED
#if FF_TIER_WANTED == 2
FF_TIER_BEGIN_AVX512_BF16
#else
FF_TIER_BEGIN_AVX512
#endif
#define FF_KERNEL_TIER_TU
#define FF_TIER_TARGET_LEVEL FF_TIER_WANTED
// First of the tagged headers, so the check below holds for sources that do not include it.
#include "kernels/simd.h"
#include FF_TIER_SOURCE
static_assert(ff::simd::kRegBytes == 64,
              "the tier's headers were compiled before its target pragma (tier_prelude.h)");
FF_TIER_END
#endif
