#pragma once
// Internal to kernels/tiers: what compile_tier.h includes before its `#pragma GCC target`. Every
// header whose inline code is not put in an ISA-tagged namespace (isa_tier.h) comes here, compiled
// for the build's own target: a copy compiled for a higher tier could be the one the linker keeps
// for all callers, and then run on a CPU without that tier. Below the pragma the tier file
// includes only its kernel source, whose internal headers carry the tag.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"
#include "kernels/adamw.h"
#include "kernels/attention_block.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/cross_entropy.h"
#include "kernels/flash_attention.h"
#include "kernels/flash_attention_bf16.h"
#include "kernels/isa_tier.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/scratch.h"
#include "kernels/swiglu.h"
#include "kernels/tier_pick.h"

// The tiers' targets. prefer-vector-width=512: GCC's generic tuning would auto-vectorize at
// 256 bits even with AVX-512 enabled, and the tile loops want the full width (simd.h, FF_WIDE).
#define FF_TIER_BEGIN_AVX512 \
  _Pragma("GCC push_options")  \
  _Pragma("GCC target(\"avx512f,avx512bw,avx512cd,avx512dq,avx512vl,prefer-vector-width=512\")")
#define FF_TIER_BEGIN_AVX512_BF16 \
  _Pragma("GCC push_options")       \
  _Pragma("GCC target(\"avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512bf16,prefer-vector-width=512\")")
#define FF_TIER_END _Pragma("GCC pop_options")
