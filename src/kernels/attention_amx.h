#pragma once
// Internal to flash_attention_bf16.cpp: its tile products on the AMX tile unit (amx_tiles.h: the
// instructions and their scalar model). The rows and pairR/pairT layouts the vector products read
// already (attention_bf16_tiles.h) are the tile unit's A and B operand layouts.
//
// Tiles used here: 0-3 the fp32 accumulators of a 16 x 64 output block, 4 and 5 the A operand and
// its remainder (an fp32 operand carried as hi + lo bf16 terms), 6 and 7 the B operand's columns
// in turn (a load into the tile a product still reads would wait for it).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/amx_tiles.h"
#include "kernels/isa_tier.h"

namespace ff::attn16 {
inline namespace FF_ISA_TAG {  // one copy per ISA tier (isa_tier.h)

using ::ff::amx::AmxTiles;
using ::ff::amx::EmulatedTiles;
using ::ff::amx::kTileRows;
using ::ff::amx::kTileWords;

// Out (16 rows x 16 NC fp32, row stride ldo floats) (+)= A . B over `steps` k-steps of 16 words:
// A (16 rows, lda words apart; A2 the same positions of the remainder, or null), B (16 word rows
// per step, ldb words apart, 16 NC columns).
template <class Tiles, int NC>
inline void tile_block(Tiles& t, float* Out, int ldo, const uint32_t* A, const uint32_t* A2, int lda,
                       const uint32_t* B, int ldb, int steps, bool accumulate) {
  const long so = long(ldo) * 4, sa = long(lda) * 4, sb = long(ldb) * 4;
  if (accumulate) {
    t.template load<0>(Out, so);
    if constexpr (NC > 1) t.template load<1>(Out + 16, so);
    if constexpr (NC > 2) t.template load<2>(Out + 32, so);
    if constexpr (NC > 3) t.template load<3>(Out + 48, so);
  } else {
    t.template zero<0>();
    if constexpr (NC > 1) t.template zero<1>();
    if constexpr (NC > 2) t.template zero<2>();
    if constexpr (NC > 3) t.template zero<3>();
  }
  for (int s = 0; s < steps; ++s) {
    const uint32_t* b = B + size_t(s) * kTileRows * ldb;
    t.template load<4>(A + s * kTileWords, sa);
    if (A2) t.template load<5>(A2 + s * kTileWords, sa);
    // One B tile per 16 columns, multiplied by A (and the remainder) while the next one loads.
    auto column = [&](auto j) {
      constexpr int J = decltype(j)::value, Bt = 6 + J % 2;
      t.template load<Bt>(b + J * kTileWords, sb);
      t.template dot<J, 4, Bt>();
      if (A2) t.template dot<J, 5, Bt>();
    };
    column(std::integral_constant<int, 0>{});
    if constexpr (NC > 1) column(std::integral_constant<int, 1>{});
    if constexpr (NC > 2) column(std::integral_constant<int, 2>{});
    if constexpr (NC > 3) column(std::integral_constant<int, 3>{});
  }
  t.template store<0>(Out, so);
  if constexpr (NC > 1) t.template store<1>(Out + 16, so);
  if constexpr (NC > 2) t.template store<2>(Out + 32, so);
  if constexpr (NC > 3) t.template store<3>(Out + 48, so);
}

// One 16-row block over `width` output columns (a multiple of 16), 64 at a time.
template <class Tiles>
inline void tile_rows(Tiles& t, float* Out, int ldo, const uint32_t* A, const uint32_t* A2, int lda,
                      const uint32_t* B, int ldb, int width, int steps, bool accumulate) {
  if (steps <= 0 && accumulate) return;
  for (int c0 = 0; c0 < width; c0 += 4 * kTileWords) {
    float* o = Out + c0;
    const uint32_t* b = B + c0;
    switch ((width - c0) / kTileWords) {
      case 1: tile_block<Tiles, 1>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      case 2: tile_block<Tiles, 2>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      case 3: tile_block<Tiles, 3>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
      default: tile_block<Tiles, 4>(t, o, ldo, A, A2, lda, b, ldb, steps, accumulate); break;
    }
  }
}

}  // namespace FF_ISA_TAG
}  // namespace ff::attn16
