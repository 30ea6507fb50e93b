#pragma once
// Which hardware runs a 16-bit GEMM here, found at run time (cpuid and oneDNN's dispatcher), never
// assumed from the build: the same binary may meet AMX, AVX512-BF16 or neither. And which ISA tier
// of fivefold's own vector kernels (attention, the element-wise loops) runs here, found the same way.
#include <string>

namespace ff {

enum class Bf16Path { amx, avx512_bf16, emulated };

Bf16Path bf16_path();
const char* bf16_path_name(Bf16Path p);  // "AMX", "AVX512-BF16", "emulated"
// One start-up line: the path, and where emulated, that bf16 will be slower than fp32 and why.
std::string bf16_path_description();
// The same for f16 (oneDNN native, or widened to fp32: exact products at fp32 speed).
std::string f16_path_description();

// The ISA tiers fivefold's own vector kernels are compiled for (kernels/isa_tier.h): the build's
// own target, and where that lacks them, AVX-512 (x86-64-v4) and AVX-512 with AVX512-BF16
// (kernels/tiers/: the attention kernels in both, the element-wise loops in AVX-512, which has all
// the instructions they use). A binary built for x86-64-v3 thus runs the AVX-512 and vdpbf16ps
// paths on a CPU that has them. The tiers compute the same functions; the rounding of their sums
// differs.
enum class KernelIsa { base = 0, avx512 = 1, avx512_bf16 = 2 };

// The highest tier this CPU runs (cpuid, the OS's saved vector state included), lowered to
// FIVEFOLD_MAX_CPU_ISA where that is set (base, avx512 or avx512_bf16, as ONEDNN_MAX_CPU_ISA
// lowers oneDNN's): found once per process. Throws, naming the variable and its values, on any
// other value. A kernel runs the highest tier compiled at or below it, or the build's own
// target where that is higher (a binary never runs code below the target it was built for).
KernelIsa kernel_isa();
// The same from given CPU facts and the variable's value (null: unset): what kernel_isa() does.
KernelIsa pick_kernel_isa(bool avx512, bool avx512_bf16, const char* max_cpu_isa);
const char* kernel_isa_name(KernelIsa t);  // "base", "avx512", "avx512_bf16"
// The tier compiled as the build's own target (the other tiers exist only above it).
KernelIsa build_kernel_isa();
// One start-up line where fivefold's kernels run a tier above the build's own target (which one,
// and what the build targets); empty where they run the build's own code.
std::string kernel_isa_description();

// What multiplies the tiles of fivefold's own bf16 attention: the vector units (vdpbf16ps on an
// AVX512-BF16 tier, widened fp32 products below it), the AMX tile unit (tdpbf16ps: a 16 x 16 fp32
// block += 16 x 32 bf16 times 32 x 16 bf16 per instruction), or the AMX blocking run by a scalar
// model of those instructions, so any CPU can test it.
enum class AttentionTiles { vector, amx, amx_emulated };

// AMX where the CPU has AMX-TILE and AMX-BF16, Linux grants this process the tile state
// (arch_prctl ARCH_REQ_XCOMP_PERM) and the kernel tier is avx512_bf16; FIVEFOLD_AMX=off keeps the
// vector units, =emulate the scalar model (tests). Found once per process; throws, naming the
// variable and its values, on any other value.
AttentionTiles attention_tiles();
// The same from given facts and the variable's value (null: unset).
AttentionTiles pick_attention_tiles(bool amx_usable, KernelIsa tier, const char* amx_variable);
const char* attention_tiles_name(AttentionTiles t);  // "vector", "AMX", "AMX (emulated)"

// Reads the kernel choices' variables (FIVEFOLD_MAX_CPU_ISA, FIVEFOLD_AMX, FIVEFOLD_AMX_GEMM)
// now, so that a value that is not a choice stops a command before it does any work: each throws
// naming its variable and its values. Every command calls it first (cli/main.cpp).
void check_kernel_choices();

// Whether this process may run AMX tile instructions: the CPU has AMX-TILE and AMX-BF16 and Linux
// granted the tile state (asked for here, once). What the peak measurement needs; the kernels'
// own choices are attention_tiles() and gemm_tiles().
bool amx_tile_unit_usable();

// What runs the 16-bit GEMMs: oneDNN (its own dispatch picks AMX, AVX512-BF16 or a widened path),
// fivefold's own bf16 GEMM on the AMX tile unit (gemm_amx.h), or that GEMM on the scalar model of
// the tile instructions (tests). FIVEFOLD_AMX_GEMM unset or =on: the tile GEMM where the CPU has
// AMX and Linux grants the tile state, else oneDNN; =off oneDNN; =emulate the model. The tile GEMM
// is the default because it measured faster than oneDNN on an AMX Xeon (bench/RESULTS.md: 2.60x
// against 2.35x fp32's tokens/s at 2 threads, level at 16, 55 MiB less memory). Found once per
// process; throws, naming the variable and its values, on any other value.
enum class GemmTiles { onednn, amx, amx_emulated };
GemmTiles gemm_tiles();
// The same from given facts and the variable's value (null: unset).
GemmTiles pick_gemm_tiles(bool amx_usable, const char* amx_gemm_variable);
const char* gemm_tiles_name(GemmTiles t);  // "oneDNN", "AMX tiles", "AMX tiles (emulated)"

}  // namespace ff
