#pragma once
// The arithmetic ceiling of one core for bf16 GEMM inputs (what a bf16 layout's MFU divides by):
// a register-only loop of AVX512-BF16 dot products (vdpbf16ps: per fp32 lane, two bf16 products
// added to the accumulator, 4 FLOPs, twice an fp32 FMA's per instruction). Where this CPU has no
// bf16 instruction, bf16 inputs are widened and multiplied in fp32: the ceiling is the FMA peak.
namespace ff {

// FLOP/s of one core; 0 when the CPU has no AVX512-BF16 (the caller then uses the FMA peak).
// Best of short bursts (~0.1 s), as measure_fma_peak.
double measure_bf16_dot_peak();

}  // namespace ff
