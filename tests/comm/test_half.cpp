// MPI-free: the f16 and bf16 conversions of core/dtype.h against an independent computation
// (exact values from ldexp, midpoints between neighbours, and round_ref.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype.h"
#include "round_ref.h"

using namespace ff;
using ff::test::kBfloat16;
using ff::test::kBinary16;
using ff::test::round_ref;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value an f16 bit pattern encodes, from the IEEE definition.
double half_value(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? std::numeric_limits<double>::infinity()
                                                   : std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

}  // namespace

TEST(F16, EveryHalfWidensToItsIeeeValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(uint16_t(h));
    bool nan = ((h >> 10) & 31) == 31 && (h & 1023) != 0;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;
      continue;
    }
    ASSERT_EQ(double(f), half_value(uint16_t(h))) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;  // -0 stays -0
  }
}

TEST(F16, EveryHalfSurvivesARoundTripBitForBit) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 31) == 31 && (h & 1023) != 0) continue;  // NaNs: next test
    ASSERT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(F16, MidpointsBetweenNeighboursRoundToTheEvenOne) {
  // All positive finite neighbours (a, a+1), subnormals and the normal boundary included; the
  // midpoint has 12 significant bits, so it is exact as a float.
  for (uint16_t a = 0; a < 0x7bff; ++a) {
    for (float sign : {1.f, -1.f}) {
      float mid = sign * float((half_value(a) + half_value(uint16_t(a + 1))) / 2);
      uint16_t even = (a & 1) ? uint16_t(a + 1) : a;
      uint16_t s = sign < 0 ? 0x8000 : 0;
      ASSERT_EQ(f32_to_f16(mid), s | even) << "between " << std::hex << a << " and " << a + 1;
      // One float step either side of the tie decides it.
      float below = std::nextafter(mid, 0.f), above = std::nextafter(mid, sign * 1e9f);
      ASSERT_EQ(f32_to_f16(below), s | a) << std::hex << a;
      ASSERT_EQ(f32_to_f16(above), s | uint16_t(a + 1)) << std::hex << a;
    }
  }
}

TEST(F16, BoundaryCases) {
  EXPECT_EQ(f32_to_f16(65504.f), 0x7bff);                          // largest finite
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.f, 0.f)), 0x7bff);     // just below the tie
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);                          // the tie rounds to inf (even)
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -25)), 0x0000);             // half of it: tie to even 0
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.f, -25), 1.f)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.f, -26)), 0x0001);             // 0.75 units
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -24)), 0x0002);            // 1.5 units: tie to 2
  EXPECT_EQ(f32_to_f16(std::ldexp(2.5f, -24)), 0x0002);            // 2.5 units: tie to 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.f, -14), 0.f)), 0x0400);  // carries into it
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.f), 0xc000);
  EXPECT_EQ(f32_to_f16(1.f + std::ldexp(1.f, -11)), 0x3c00);      // tie above 1 goes to 1
  EXPECT_EQ(f32_to_f16(1.f + std::ldexp(3.f, -11)), 0x3c02);      // tie above 1+2^-10 goes up
  // NaN stays a quiet NaN with its sign, even one whose payload sits below the kept bits.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc12345u}) {
    uint16_t h = f32_to_f16(float_of(nan));
    EXPECT_EQ(h & 0x7c00, 0x7c00) << std::hex << nan;
    EXPECT_NE(h & 0x0200, 0) << "quiet bit, " << std::hex << nan;
    EXPECT_EQ(h >> 15, nan >> 31);
    EXPECT_TRUE(std::isnan(f16_to_f32(h)));
  }
}

TEST(F16, RandomFloatsRoundAsTheReference) {
  std::mt19937 rng(7);
  // Exponents from far below the subnormals to past the overflow, both signs.
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1), exponent(127 - 30, 127 + 17),
      sign(0, 1);
  for (int i = 0; i < 1000000; ++i) {
    float x = float_of(sign(rng) << 31 | exponent(rng) << 23 | mantissa(rng));
    double want = round_ref(x, kBinary16);
    float got = f16_to_f32(f32_to_f16(x));
    ASSERT_EQ(double(got), want) << "x = " << x << " bits " << std::hex << bits_of(x);
  }
}

TEST(Bf16, RandomFloatsRoundAsTheReference) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1), exponent(1, 254), sign(0, 1);
  for (int i = 0; i < 1000000; ++i) {
    float x = float_of(sign(rng) << 31 | exponent(rng) << 23 | mantissa(rng));
    ASSERT_EQ(double(bf16_to_f32(f32_to_bf16(x))), round_ref(x, kBfloat16)) << std::hex << bits_of(x);
  }
  EXPECT_EQ(f32_to_bf16(257.f), f32_to_bf16(256.f));  // tie to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(259.f)), 260.f);  // tie to even, upwards
}
