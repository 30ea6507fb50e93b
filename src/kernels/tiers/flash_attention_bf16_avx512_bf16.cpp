// flash_attention_bf16.cpp's kernels for AVX-512 with AVX512-BF16 (vdpbf16ps),
// for builds whose own target lacks it; picked at run time on a CPU that has it (cpu_isa.h).
#define FF_TIER_WANTED 2
#define FF_TIER_SOURCE "kernels/flash_attention_bf16.cpp"
#include "kernels/tiers/compile_tier.h"
