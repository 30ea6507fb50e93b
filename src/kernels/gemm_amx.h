#pragma once
// fivefold's own bf16 GEMM on the AMX tile unit (amx_tiles.h), beside oneDNN's: which of the two
// runs the 16-bit GEMMs is gemm_tiles()'s choice (cpu_isa.h, FIVEFOLD_AMX_GEMM).
//
// How it multiplies. op(B) is packed per call into the tile unit's B layout: for each 16 output
// columns and each 32 values of the reduced dimension, one 1 KiB tile whose word (k, n) holds
// rows 2k and 2k + 1 of column n, zero past K and N. op(A) is read in place where its rows are
// stored with the reduced dimension contiguous, M is a multiple of 16 and K of 32 (a forward
// x W^T, an input gradient dy W); otherwise (a weight gradient's dy^T, ragged shapes) it is packed
// into 1 KiB tiles of 16 rows by 32 values, zero past M and K, so the padding multiplies zeros by
// zeros (and packing dy^T writes within a tile, not 16 rows a whole K apart). A weight gradient
// C = A^T B transposes the narrower of its two operands: where that is B (dW = dy^T x with fewer
// inputs than outputs) it computes C^T = B^T A and writes C back transposed. The output is cut
// in 32 x 32 blocks (four accumulator tiles fed by two A and two B tiles per step of 32), and the
// work in items, GotoBLAS's way: one row pair of one column panel (at most 256 columns, whose packed
// B over all of K is at most 1 MiB, so it stays in L2 from one row pair to the next), over K in
// chunks of at most 512 values (the row pair's A over a chunk, 32 KiB, stays in L1 while the
// panel's column pairs stream past it). The sums accumulate straight in C where the item lies
// within C and alpha is 1 (beta 0 or 1: C loaded into the tiles first), else in a 32 x 256 stage
// written out once, scaled and added, transposed or rounded to bf16.
//
// What it computes: every product of two bf16 values is exact in fp32, summed in fp32 in the tile
// unit's order (the model's: k order within a word pair and across steps), so results differ from
// oneDNN's and from the fp32 GEMM's only in the rounding of those sums.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu_isa.h"

namespace ff {

// C(M,N) = alpha op(A) op(B) + beta C: A and B bf16 bits, stored row-major with row strides lda,
// ldb (op transposes where ta / tb, as gemm.h); C fp32. beta 0 never reads C. `how` is amx (only
// where gemm_tiles() found the tile unit usable) or amx_emulated.
void gemm_bf16_on_tiles(GemmTiles how, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t* A,
                        int lda, const uint16_t* B, int ldb, float beta, float* C, int ldc);
// C16(M,N) = op(A) op(B) stored bf16 by the product itself: each fp32 sum rounded to nearest even
// as it leaves the tiles, the bits convert_from_f32 gives the fp32 product (gemm_forward_rounded's
// output, which SwiGLU reads): no fp32 C is written and read back.
void gemm_bf16_on_tiles_rounded(GemmTiles how, bool ta, bool tb, int M, int N, int K, const uint16_t* A, int lda,
                                const uint16_t* B, int ldb, uint16_t* C16, int ldc);
// Bytes of the calling thread's scratch either form packs a product of this shape into (its
// operands in tiles; the planner's memory model counts the largest).
size_t gemm_bf16_on_tiles_scratch_bytes(bool ta, bool tb, int M, int N, int K);

}  // namespace ff
