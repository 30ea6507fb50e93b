// rmsnorm.cpp's fp32 kernels for AVX-512 (x86-64-v4),
// for builds whose own target lacks it; picked at run time on a CPU that has it (cpu_isa.h).
#define FF_TIER_WANTED 1
#define FF_TIER_SOURCE "kernels/rmsnorm.cpp"
#include "kernels/tiers/compile_tier.h"
