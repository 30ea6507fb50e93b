#include "kernels/cpu_isa.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(FIVEFOLD_GEMM_ONEDNN)
#include <dnnl.hpp>
#endif

#include "kernels/gemm.h"
#include "kernels/isa_tier.h"

namespace ff {
namespace {

// cpuid leaf 7: sub-leaf 0 EDX bit 22 = AMX-BF16, sub-leaf 1 EAX bit 5 = AVX512_BF16.
bool cpuid_bit(unsigned subleaf, int reg, unsigned bit) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[4] = {0, 0, 0, 0};
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, subleaf, r[0], r[1], r[2], r[3]);
  return (r[reg] >> bit) & 1u;
#else
  (void)subleaf, (void)reg, (void)bit;
  return false;
#endif
}

// The ISA oneDNN will actually dispatch to (it also checks that the OS enabled the AMX tiles).
bool onednn_reaches(bool amx) {
#if defined(FIVEFOLD_GEMM_ONEDNN)
  const auto isa = dnnl::get_effective_cpu_isa();
  return amx ? isa >= dnnl::cpu_isa::avx512_core_amx : isa >= dnnl::cpu_isa::avx512_core_bf16;
#else
  (void)amx;
  return false;
#endif
}

// AVX-512 as x86-64-v4 has it; libgcc's check includes the OS saving the zmm and mask registers.
bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// AMX-TILE and AMX-BF16 (cpuid leaf 7 EDX bits 24 and 22), and the OS's grant of the tile data
// state: Linux (5.16 on) leaves it disabled until a process asks (XFEATURE_XTILEDATA = 18); the
// first tile instruction without it is SIGILL. The grant is per process; oneDNN asks the same.
bool amx_usable() {
#if defined(__linux__) && defined(__x86_64__)
  if (!cpuid_bit(0, 3, 24) || !cpuid_bit(0, 3, 22)) return false;
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
  return false;
#endif
}

constexpr KernelIsa kTiers[] = {KernelIsa::base, KernelIsa::avx512, KernelIsa::avx512_bf16};

}  // namespace

Bf16Path bf16_path() {
  // Detected once: the CPU and the oneDNN build do not change while the process runs.
  static const Bf16Path path = [] {
    if (!native_16bit_gemm(DType::bf16)) return Bf16Path::emulated;
    if (cpuid_bit(0, 3, 22) && onednn_reaches(true)) return Bf16Path::amx;
    if (cpuid_bit(1, 0, 5) && onednn_reaches(false)) return Bf16Path::avx512_bf16;
    return Bf16Path::emulated;
  }();
  return path;
}

const char* bf16_path_name(Bf16Path p) {
  switch (p) {
    case Bf16Path::amx: return "AMX";
    case Bf16Path::avx512_bf16: return "AVX512-BF16";
    case Bf16Path::emulated: return "emulated";
  }
  return "?";
}

std::string bf16_path_description() {
  // The tile GEMM takes the bf16 GEMMs on an AMX CPU, and on any CPU under FIVEFOLD_AMX_GEMM=emulate.
  const GemmTiles g = gemm_tiles();
  if (g == GemmTiles::amx_emulated)
    return std::string("bf16 GEMMs: fivefold's tile GEMM on a scalar model of the AMX instructions ("
                       "FIVEFOLD_AMX_GEMM=emulate: for tests, far slower than oneDNN's ") +
           bf16_path_name(bf16_path()) + " path it replaces)";
  switch (bf16_path()) {
    case Bf16Path::amx:
      return std::string(g == GemmTiles::amx ? "bf16 GEMMs: fivefold's own on AMX tiles (FIVEFOLD_AMX_GEMM=off: "
                                               "oneDNN's)"
                                             : "bf16 GEMMs: oneDNN on AMX tiles (FIVEFOLD_AMX_GEMM=off)") +
             " (bf16 inputs, fp32 accumulation); bf16 attention's tile products: " +
             attention_tiles_name(attention_tiles()) + " (FIVEFOLD_AMX=off: the vector units)";
    case Bf16Path::avx512_bf16:
      return "bf16 GEMMs: oneDNN with AVX512-BF16 dot products (vdpbf16ps: two bf16 products per fp32 "
             "lane, fp32 accumulation)";
    case Bf16Path::emulated: break;
  }
  return "bf16 GEMMs: emulated (this CPU has neither AMX nor AVX512-BF16): every bf16 operand is widened "
         "to fp32 and multiplied on the fp32 FMA units, so bf16 runs SLOWER than fp32 (the same "
         "arithmetic plus the conversions); use precision = fp32 here for speed";
}

std::string f16_path_description() {
  if (native_16bit_gemm(DType::f16)) return "fp16 GEMMs: oneDNN f16 matmul, fp32 accumulation";
  return "fp16 GEMMs: oneDNN has no f16 matmul for this CPU: operands rounded to fp16, widened and multiplied "
         "in fp32 (products of two fp16 values are exact in fp32, so the numbers are fp16's; the speed is fp32's)";
}

KernelIsa pick_kernel_isa(bool avx512, bool avx512_bf16, const char* max_cpu_isa) {
  const KernelIsa cpu = !avx512 ? KernelIsa::base : avx512_bf16 ? KernelIsa::avx512_bf16 : KernelIsa::avx512;
  if (!max_cpu_isa || !*max_cpu_isa) return cpu;
  for (KernelIsa t : kTiers)
    if (std::strcmp(max_cpu_isa, kernel_isa_name(t)) == 0) return std::min(cpu, t);
  throw std::invalid_argument(std::string("FIVEFOLD_MAX_CPU_ISA=") + max_cpu_isa +
                              " names no kernel tier: set it to base, avx512 or avx512_bf16, or unset it "
                              "for the best this CPU runs");
}

KernelIsa kernel_isa() {
  // Found once: the CPU does not change while the process runs, nor does its environment variable.
  static const KernelIsa isa =
      pick_kernel_isa(cpu_has_avx512(), cpuid_bit(1, 0, 5), std::getenv("FIVEFOLD_MAX_CPU_ISA"));
  return isa;
}

const char* kernel_isa_name(KernelIsa t) {
  switch (t) {
    case KernelIsa::base: return "base";
    case KernelIsa::avx512: return "avx512";
    case KernelIsa::avx512_bf16: return "avx512_bf16";
  }
  return "?";
}

KernelIsa build_kernel_isa() { return KernelIsa(FF_ISA_LEVEL); }

AttentionTiles pick_attention_tiles(bool amx, KernelIsa tier, const char* variable) {
  const std::string v = variable ? variable : "";
  if (v == "emulate") return AttentionTiles::amx_emulated;
  if (v == "off") return AttentionTiles::vector;
  if (!v.empty() && v != "on")
    throw std::invalid_argument("FIVEFOLD_AMX=" + v +
                                " is not a choice: on (AMX where the CPU has it, the default), off (the vector "
                                "units) or emulate (a scalar model of the AMX instructions, for tests)");
  return amx && tier >= KernelIsa::avx512_bf16 ? AttentionTiles::amx : AttentionTiles::vector;
}

AttentionTiles attention_tiles() {
  // Found once: the CPU, the OS's grant and the variable do not change while the process runs.
  static const AttentionTiles tiles = [] {
    const char* v = std::getenv("FIVEFOLD_AMX");
    const bool off = v && (std::strcmp(v, "off") == 0 || std::strcmp(v, "emulate") == 0);
    return pick_attention_tiles(!off && amx_tile_unit_usable(), std::max(build_kernel_isa(), kernel_isa()), v);
  }();
  return tiles;
}

const char* attention_tiles_name(AttentionTiles t) {
  switch (t) {
    case AttentionTiles::vector: return "vector";
    case AttentionTiles::amx: return "AMX";
    case AttentionTiles::amx_emulated: return "AMX (emulated)";
  }
  return "?";
}

void check_kernel_choices() {
  kernel_isa();
  attention_tiles();
  gemm_tiles();
}

bool amx_tile_unit_usable() {
  static const bool usable = amx_usable();  // found once: the CPU and the OS's grant do not change
  return usable;
}

GemmTiles pick_gemm_tiles(bool amx, const char* variable) {
  const std::string v = variable ? variable : "";
  if (v == "emulate") return GemmTiles::amx_emulated;
  if (v == "off") return GemmTiles::onednn;
  if (!v.empty() && v != "on")
    throw std::invalid_argument("FIVEFOLD_AMX_GEMM=" + v +
                                " is not a choice: on (fivefold's tile GEMM where the CPU has AMX, else oneDNN; "
                                "the default), off (oneDNN's GEMMs) or emulate (the tile GEMM on a scalar model "
                                "of the AMX instructions, for tests)");
  return amx ? GemmTiles::amx : GemmTiles::onednn;
}

GemmTiles gemm_tiles() {
  // Found once, as attention_tiles(); the tile state is asked for only where the tile GEMM may run.
  static const GemmTiles tiles = [] {
    const char* v = std::getenv("FIVEFOLD_AMX_GEMM");
    const bool on = !v || !*v || std::strcmp(v, "on") == 0;
    return pick_gemm_tiles(on && amx_tile_unit_usable(), v);
  }();
  return tiles;
}

const char* gemm_tiles_name(GemmTiles t) {
  switch (t) {
    case GemmTiles::onednn: return "oneDNN";
    case GemmTiles::amx: return "AMX tiles";
    case GemmTiles::amx_emulated: return "AMX tiles (emulated)";
  }
  return "?";
}

std::string kernel_isa_description() {
  const KernelIsa build = build_kernel_isa(), run = std::max(build, kernel_isa());
  if (run == build) return "";
  return std::string("fivefold's own kernels (attention; the element-wise loops up to avx512): the ") +
         kernel_isa_name(run) + " tier, picked for this CPU at run time (the build targets " +
         kernel_isa_name(build) + "; FIVEFOLD_MAX_CPU_ISA lowers the pick)";
}

}  // namespace ff
