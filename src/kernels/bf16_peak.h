#pragma once
// The arithmetic ceiling of one core for bf16 GEMM inputs (what a bf16 layout's MFU divides by):
// on an AMX CPU the tile unit's, else a register-only loop of AVX512-BF16 dot products (vdpbf16ps: per fp32 lane, two bf16 products
// added to the accumulator, 4 FLOPs, twice an fp32 FMA's per instruction). Where this CPU has no
// bf16 instruction, bf16 inputs are widened and multiplied in fp32: the ceiling is the FMA peak.
namespace ff {

// FLOP/s of one core; 0 when the CPU has no AVX512-BF16 (the caller then uses the FMA peak).
// Best of short bursts (~0.1 s), as measure_fma_peak.
double measure_bf16_dot_peak();
// FLOP/s of one core's AMX tile unit on bf16 (tdpbf16ps: a 16 x 16 fp32 block += a 16 x 32 by
// 32 x 16 bf16 product, 16384 FLOPs an instruction), four independent accumulators on operands
// held in the tile registers; 0 where this process cannot use AMX.
double measure_amx_bf16_peak();
// The ceiling of a bf16 GEMM on one core here, what a bf16 run's MFU divides by: the tile unit's
// where the bf16 GEMMs run on it (bf16_path() AMX: oneDNN's, or fivefold's tile GEMM), else the
// dot products' (0: neither, the caller uses the FMA peak).
double measure_bf16_gemm_peak();

}  // namespace ff
