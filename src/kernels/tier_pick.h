#pragma once
// Internal to the kernels layer: how a kernel source compiled once more for AVX-512 (tiers/) picks
// the copy that runs here. The source defines a table of its entry points in FF_ISA_TAG (isa_tier.h);
// its AVX-512 copy, compiled only where the build's own target lacks AVX-512, defines the same in
// isa_avx512. In the source's own compilation FF_TIER_PICK(Type, table) declares that copy where
// it exists and defines table_for_cpu(): the AVX-512 copy where kernel_isa() reaches it, else the
// build's own. The choice is fixed when this is first included, at the build's own level.
#include "kernels/cpu_isa.h"
#include "kernels/isa_tier.h"

#if FF_ISA_LEVEL < 1
#define FF_TIER_PICK(Type, table)                                                      \
  namespace isa_avx512 {                                                               \
  extern const Type table;                                                             \
  }                                                                                    \
  namespace {                                                                          \
  const Type& table##_for_cpu() {                                                      \
    return kernel_isa() >= KernelIsa::avx512 ? isa_avx512::table : FF_ISA_TAG::table; \
  }                                                                                    \
  }
#else
#define FF_TIER_PICK(Type, table)                               \
  namespace {                                                   \
  const Type& table##_for_cpu() { return FF_ISA_TAG::table; }   \
  }
#endif
