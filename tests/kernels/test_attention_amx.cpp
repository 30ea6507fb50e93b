// The AMX tile products of the bf16 attention (kernels/attention_amx.h): the choice of unit, the
// scalar model of tdpbf16ps against the instruction's definition computed here in double, and,
// on a CPU with AMX, the hardware against that model. The attention itself on the model runs in
// CTest kernels_amx_emulated (test_attention_bf16.cpp and test_attention_documents.cpp with
// FIVEFOLD_AMX=emulate), and on the hardware wherever the CPU has AMX.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/attention_amx.h"
#include "kernels/cpu_isa.h"

namespace {

using ff::AttentionTiles;
using ff::KernelIsa;
using ff::attn16::EmulatedTiles;

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
// A random bf16 value (bits), normal, of either sign, exponents spread over 2^-8 .. 2^7.
uint16_t random_bf16(std::mt19937& rng) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-8, 7), sign(0, 1);
  const float x = std::ldexp(mant(rng), ex(rng)) * (sign(rng) ? -1.0f : 1.0f);
  return uint16_t(bits(x) >> 16);
}
double bf16_value(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// C + A . B through the model's registers: one tdpbf16ps on 16 x 16 words.
std::vector<float> model_dot(const std::vector<uint32_t>& A, const std::vector<uint32_t>& B, const std::vector<float>& C) {
  std::vector<float> out(256);
  EmulatedTiles t;
  t.load<0>(C.data(), 64);
  t.load<4>(A.data(), 64);
  t.load<6>(B.data(), 64);
  t.dot<0, 4, 6>();
  t.store<0>(out.data(), 64);
  return out;
}

TEST(AttentionTiles, PickFollowsTheCpuTheTierAndTheVariable) {
  using ff::pick_attention_tiles;
  EXPECT_EQ(pick_attention_tiles(true, KernelIsa::avx512_bf16, nullptr), AttentionTiles::amx);
  EXPECT_EQ(pick_attention_tiles(true, KernelIsa::avx512_bf16, "on"), AttentionTiles::amx);
  EXPECT_EQ(pick_attention_tiles(true, KernelIsa::avx512_bf16, "off"), AttentionTiles::vector);
  EXPECT_EQ(pick_attention_tiles(false, KernelIsa::avx512_bf16, nullptr), AttentionTiles::vector);
  // A tier capped below avx512_bf16 (FIVEFOLD_MAX_CPU_ISA) keeps the vector units.
  EXPECT_EQ(pick_attention_tiles(true, KernelIsa::avx512, nullptr), AttentionTiles::vector);
  EXPECT_EQ(pick_attention_tiles(false, KernelIsa::base, "emulate"), AttentionTiles::amx_emulated);
  try {
    pick_attention_tiles(true, KernelIsa::avx512_bf16, "yes");
    FAIL() << "FIVEFOLD_AMX=yes was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("FIVEFOLD_AMX=yes"), std::string::npos) << m;
    EXPECT_NE(m.find("emulate"), std::string::npos) << m;
  }
}

// C (16 x 16 fp32) += A (16 rows of 16 words) . B (16 rows of 16 words) by the instruction's
// definition, summed in double: the model's fp32 sums may differ by their rounding alone.
TEST(AmxTileModel, DotIsTheSumOfPairProductsOverTheWords) {
  std::mt19937 rng(7);
  std::vector<uint32_t> A(256), B(256);
  std::vector<float> C(256);
  for (auto* m : {&A, &B})
    for (auto& w : *m) w = random_bf16(rng) | uint32_t(random_bf16(rng)) << 16;
  std::normal_distribution<float> nd;
  for (auto& c : C) c = nd(rng);
  const std::vector<float> got = model_dot(A, B, C);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      double want = C[m * 16 + n], mag = std::abs(want);
      for (int k = 0; k < 16; ++k) {
        const uint32_t a = A[m * 16 + k], b = B[k * 16 + n];
        const double lo = bf16_value(a & 0xffff) * bf16_value(b & 0xffff), hi = bf16_value(a >> 16) * bf16_value(b >> 16);
        want += lo + hi;
        mag += std::abs(lo) + std::abs(hi);
      }
      // 33 fp32 additions, each rounding by at most 2^-24 of a partial sum bounded by mag.
      EXPECT_NEAR(got[m * 16 + n], want, 33 * std::ldexp(mag, -24)) << "m " << m << " n " << n;
    }
}

// The instruction reads denormal bf16 inputs as zero and flushes denormal results.
TEST(AmxTileModel, DenormalInputsCountAsZeroAndDenormalResultsFlush) {
  std::vector<uint32_t> A(256, 0), B(256, 0);
  const std::vector<float> C(256, 0.0f);
  const uint32_t one = bits(1.0f) >> 16, half = bits(0.5f) >> 16;
  A[0] = 0x0001u | one << 16;  // row 0: (a denormal, 1.0)
  A[16] = 0x0080u << 16;       // row 1: (0, 2^-126, the smallest normal)
  B[0] = one | half << 16;     // (1.0, 0.5): row 1's product 2^-127 is denormal
  const std::vector<float> got = model_dot(A, B, C);
  EXPECT_EQ(got[0], 0.5f);  // the denormal lo term added nothing; hi 1.0 * 0.5
  EXPECT_EQ(bits(got[16]), 0u) << "2^-127 should flush to +0, got " << got[16];
}

#if defined(__x86_64__)
// Candidate orders of the unit's additions for one instruction's contribution to one output:
// 32 exact products p[0..32) (lo, hi of each word pair in k order) added to acc.
enum class AddOrder { fma_each, pair_then_add, instruction_sum_then_add, one_rounding };
float add_products(float acc, const double* p, AddOrder order) {
  switch (order) {
    case AddOrder::fma_each:  // the model's: one fp32 rounding per product
      for (int i = 0; i < 32; ++i) acc = float(double(acc) + p[i]);
      return acc;
    case AddOrder::pair_then_add:  // each word pair's two products summed, rounded, then added
      for (int i = 0; i < 32; i += 2) acc = float(double(acc) + double(float(p[i] + p[i + 1])));
      return acc;
    case AddOrder::instruction_sum_then_add: {  // the 32 products summed exactly, rounded, added
      double sum = 0;
      for (int i = 0; i < 32; ++i) sum += p[i];
      return float(double(acc) + double(float(sum)));
    }
    case AddOrder::one_rounding: {  // acc and the 32 products rounded once
      double sum = acc;
      for (int i = 0; i < 32; ++i) sum += p[i];
      return float(sum);
    }
  }
  return acc;
}

// The hardware against the model over a whole block product (accumulating, with a remainder term,
// three k-steps, 64 columns): the same 193 terms per output summed in fp32, so apart by rounding
// alone, at most 2 x 193 roundings of 2^-24 of the terms' magnitude. It also counts which order of
// the additions reproduces the hardware's bits (the model's fp32 sums follow Intel's pseudo-code).
TEST(AmxTiles, HardwareMatchesTheScalarModelUpToTheRoundingOfItsSums) {
  if (ff::attention_tiles() != AttentionTiles::amx)
    GTEST_SKIP() << "this CPU has no AMX for fivefold's kernels (" << ff::attention_tiles_name(ff::attention_tiles())
                 << "); the model's own tests ran above";
  std::mt19937 rng(11);
  const int lda = 48, ldb = 64, ldo = 64, steps = 3;
  std::vector<uint32_t> A(16 * lda), A2(16 * lda), B(size_t(steps) * 16 * ldb);
  for (auto* m : {&A, &A2, &B})
    for (auto& w : *m) w = random_bf16(rng) | uint32_t(random_bf16(rng)) << 16;
  std::normal_distribution<float> nd;
  std::vector<float> out_hw(16 * ldo), out_model;
  for (auto& x : out_hw) x = nd(rng);
  out_model = out_hw;
  const std::vector<float> start = out_hw;
  ff::attn16::AmxTiles hw;
  hw.configure();
  ff::attn16::tile_rows(hw, out_hw.data(), ldo, A.data(), A2.data(), lda, B.data(), ldb, 64, steps, true);
  hw.release();
  EmulatedTiles model;
  ff::attn16::tile_rows(model, out_model.data(), ldo, A.data(), A2.data(), lda, B.data(), ldb, 64, steps, true);
  const AddOrder orders[] = {AddOrder::fma_each, AddOrder::pair_then_add, AddOrder::instruction_sum_then_add,
                             AddOrder::one_rounding};
  int same[4] = {}, model_same = 0;
  double worst = 0;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < ldo; ++n) {
      const size_t o = size_t(m) * ldo + n;
      double mag = std::abs(start[o]);
      float by_order[4];
      for (int c = 0; c < 4; ++c) by_order[c] = start[o];
      for (int st = 0; st < steps; ++st)
        for (const auto* a : {&A, &A2}) {  // the order tile_block issues them: A, then its remainder
          double p[32];
          for (int k = 0; k < 16; ++k) {
            const uint32_t wa = (*a)[size_t(m) * lda + st * 16 + k], wb = B[(size_t(st) * 16 + k) * ldb + n];
            p[2 * k] = bf16_value(wa & 0xffff) * bf16_value(wb & 0xffff);
            p[2 * k + 1] = bf16_value(wa >> 16) * bf16_value(wb >> 16);
            mag += std::abs(p[2 * k]) + std::abs(p[2 * k + 1]);
          }
          for (int c = 0; c < 4; ++c) by_order[c] = add_products(by_order[c], p, orders[c]);
        }
      for (int c = 0; c < 4; ++c) same[c] += by_order[c] == out_hw[o];
      model_same += out_model[o] == out_hw[o];
      const double err = std::abs(double(out_hw[o]) - out_model[o]) / std::ldexp(mag, -24);
      worst = std::max(worst, err);
    }
  std::printf("  AMX against the model: %d of %zu outputs bitwise equal, worst difference %.1f units of 2^-24 of "
              "the terms' magnitude (bound 386)\n  bitwise equal by order of additions: fma each %d, pair then add "
              "%d, instruction sum then add %d, one rounding %d\n",
              model_same, out_hw.size(), worst, same[0], same[1], same[2], same[3]);
  EXPECT_LE(worst, 2.0 * 193);
}
#endif

}  // namespace
