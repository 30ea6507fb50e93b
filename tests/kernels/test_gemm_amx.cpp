// fivefold's bf16 GEMM on the AMX tile unit (kernels/gemm_amx.h), on the scalar model of the tile
// instructions (any CPU) and, where the CPU has AMX, on the hardware: every transpose, shapes that
// fill whole 32 x 32 blocks and ragged ones (a tail of rows, columns and the reduced dimension),
// padded row strides, and the alpha / beta cases the kernel treats apart (beta 0 never reads C;
// alpha 1 with beta 0 or 1 stores the tiles straight into whole blocks of C), and the form that
// stores bf16 (bitwise the fp32 output converted). The expected values
// are computed here: exactly, in integers, where the operands are small integers (every partial
// sum is then exact in fp32, in any order of addition, so the result must be bit-exact), and in
// double for random operands (fp32 summation of exact products is all that may differ). CTest
// kernels_amx_gemm_emulated runs the typed GEMM's own tests with FIVEFOLD_AMX_GEMM=emulate, so the
// dispatch to this kernel is checked too.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "core/dtype.h"
#include "kernels/bf16_peak.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"
#include "kernels/gemm_amx.h"
#include "kernels/gemm_precision.h"
#include "kernels/weight_copy.h"

namespace {

using ff::GemmTiles;

struct Shape {
  int M, N, K;
};
// Whole blocks read in place (M % 16 = 0, K % 32 = 0), a 2 x 2 grid of blocks with a 16-row and a
// 16-column edge, ragged tails everywhere, a single reduced value, a long reduced dimension; K in
// three chunks with the columns in panels, the last ending in a single column tile; many panels.
const Shape kShapes[] = {{64, 64, 96}, {80, 48, 64}, {37, 45, 70},    {16, 16, 32}, {5, 3, 1},
                         {33, 17, 65}, {19, 40, 300}, {40, 300, 1100}, {96, 520, 64}};

struct Case {
  float alpha, beta;
};
// beta 0 (C holds NaN: it must not be read), beta 1 with alpha 1 (accumulated in the tiles), and
// general scaling through the staging block.
const Case kCases[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {2.0f, 0.5f}, {-0.5f, 0.0f}};

struct Problem {
  bool ta, tb;
  Shape s;
  int lda, ldb, ldc;
  std::vector<uint16_t> a, b;  // bf16 bits, stored (K, M) / (M, K) and (N, K) / (K, N)
  std::vector<float> c;        // the starting C, ldc floats per row

  double a_at(int m, int k) const { return ff::bf16_to_f32(ta ? a[size_t(k) * lda + m] : a[size_t(m) * lda + k]); }
  double b_at(int k, int n) const { return ff::bf16_to_f32(tb ? b[size_t(n) * ldb + k] : b[size_t(k) * ldb + n]); }
};

// Operands of the given shape with padded strides; `value` draws each stored element.
template <class Draw>
Problem make_problem(bool ta, bool tb, Shape s, Draw value) {
  Problem p{ta, tb, s, (ta ? s.M : s.K) + 3, (tb ? s.K : s.N) + 5, s.N + 2, {}, {}, {}};
  p.a.resize(size_t(ta ? s.K : s.M) * p.lda);
  p.b.resize(size_t(tb ? s.N : s.K) * p.ldb);
  p.c.resize(size_t(s.M) * p.ldc);
  for (auto& x : p.a) x = ff::f32_to_bf16(value());
  for (auto& x : p.b) x = ff::f32_to_bf16(value());
  for (auto& x : p.c) x = value();
  return p;
}

// f(problem) for every transpose of every shape, operands drawn by `value`.
template <class Draw, class F>
void for_each_problem(Draw value, F f) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& s : kShapes) f(make_problem(ta, tb, s, value));
}

std::vector<float> run(GemmTiles how, const Problem& p, Case k) {
  std::vector<float> c = p.c;
  if (k.beta == 0.0f)  // never read: NaN where a stray read would show
    for (int m = 0; m < p.s.M; ++m)
      for (int n = 0; n < p.s.N; ++n) c[size_t(m) * p.ldc + n] = std::numeric_limits<float>::quiet_NaN();
  ff::gemm_bf16_on_tiles(how, p.ta, p.tb, p.s.M, p.s.N, p.s.K, k.alpha, p.a.data(), p.lda, p.b.data(), p.ldb, k.beta,
                         c.data(), p.ldc);
  return c;
}

std::string where(const Problem& p, Case k, int m, int n) {
  return "ta=" + std::to_string(p.ta) + " tb=" + std::to_string(p.tb) + " M=" + std::to_string(p.s.M) +
         " N=" + std::to_string(p.s.N) + " K=" + std::to_string(p.s.K) + " alpha=" + std::to_string(k.alpha) +
         " beta=" + std::to_string(k.beta) + " at (" + std::to_string(m) + ", " + std::to_string(n) + ")";
}

// Small integers: every product and partial sum is an integer below 2^24, so any order of fp32
// additions is exact, and alpha / beta (powers of two) scale exactly: the result is bit-exact.
void check_exact(GemmTiles how) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-4, 4);
  for_each_problem([&] { return float(small(rng)); }, [&](const Problem& p) {
    const Shape& s = p.s;
    for (const Case& k : kCases) {
      const std::vector<float> c = run(how, p, k);
      for (int m = 0; m < s.M; ++m) {
        for (int n = 0; n < s.N; ++n) {
          long dot = 0;
          for (int q = 0; q < s.K; ++q) dot += long(p.a_at(m, q)) * long(p.b_at(q, n));
          const double want = k.alpha * double(dot) + (k.beta == 0.0f ? 0.0 : k.beta * p.c[size_t(m) * p.ldc + n]);
          ASSERT_EQ(c[size_t(m) * p.ldc + n], want) << where(p, k, m, n);
        }
        for (int n = s.N; n < p.ldc; ++n)  // a row's padding is not C's
          ASSERT_EQ(std::bit_cast<uint32_t>(c[size_t(m) * p.ldc + n]),
                    std::bit_cast<uint32_t>(p.c[size_t(m) * p.ldc + n]))
              << where(p, k, m, n);
      }
    }
  });
}

// Random normal operands against the double product of the same bf16 values: K fp32 additions of
// exact products, then alpha and beta's roundings, at most (K + 2) roundings of 2^-24 of the
// terms' magnitude (the products', and beta C's).
void check_random(GemmTiles how) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for_each_problem([&] { return nd(rng); }, [&](const Problem& p) {
    const Shape& s = p.s;
    for (const Case& k : kCases) {
      const std::vector<float> c = run(how, p, k);
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double dot = 0, mag = 0;
          for (int q = 0; q < s.K; ++q) {
            const double t = p.a_at(m, q) * p.b_at(q, n);
            dot += t, mag += std::abs(t);
          }
          const double c0 = k.beta == 0.0f ? 0.0 : double(k.beta) * p.c[size_t(m) * p.ldc + n];
          const double want = k.alpha * dot + c0;
          const double bound = (s.K + 2) * std::ldexp(1.0, -24) * (std::abs(k.alpha) * mag + std::abs(c0));
          ASSERT_NEAR(c[size_t(m) * p.ldc + n], want, bound) << where(p, k, m, n);
        }
    }
  });
}

// The bf16-storing form against the fp32 form's output converted afterwards: bit for bit, every
// transpose and shape (the rows' padding untouched).
void check_rounded(GemmTiles how) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd;
  for_each_problem([&] { return nd(rng); }, [&](const Problem& p) {
    const Shape& s = p.s;
    const std::vector<float> c32 = run(how, p, {1.0f, 0.0f});
    std::vector<uint16_t> want(c32.size()), got(c32.size(), 0x7777);
    ff::convert_from_f32(ff::TypedPtr(want.data(), ff::DType::bf16), c32.data(), c32.size());
    ff::gemm_bf16_on_tiles_rounded(how, p.ta, p.tb, s.M, s.N, s.K, p.a.data(), p.lda, p.b.data(), p.ldb, got.data(),
                                   p.ldc);
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < p.ldc; ++n) {
        const size_t i = size_t(m) * p.ldc + n;
        ASSERT_EQ(got[i], n < s.N ? want[i] : uint16_t(0x7777)) << where(p, {1.0f, 0.0f}, m, n);
      }
  });
}

TEST(GemmTiles, PickFollowsTheCpuAndTheVariable) {
  using ff::pick_gemm_tiles;
  // The tile GEMM where the CPU has AMX unless =off; oneDNN elsewhere unless emulated.
  EXPECT_EQ(pick_gemm_tiles(true, nullptr), GemmTiles::amx);  // the default where the CPU has AMX
  EXPECT_EQ(pick_gemm_tiles(true, ""), GemmTiles::amx);
  EXPECT_EQ(pick_gemm_tiles(false, nullptr), GemmTiles::onednn);
  EXPECT_EQ(pick_gemm_tiles(true, "off"), GemmTiles::onednn);
  EXPECT_EQ(pick_gemm_tiles(true, "on"), GemmTiles::amx);
  EXPECT_EQ(pick_gemm_tiles(false, "on"), GemmTiles::onednn);  // no AMX here: oneDNN, not a crash
  EXPECT_EQ(pick_gemm_tiles(false, "emulate"), GemmTiles::amx_emulated);
  try {
    pick_gemm_tiles(true, "yes");
    FAIL() << "FIVEFOLD_AMX_GEMM=yes was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("FIVEFOLD_AMX_GEMM=yes"), std::string::npos) << m;
    EXPECT_NE(m.find("emulate"), std::string::npos) << m;
  }
  EXPECT_STREQ(ff::gemm_tiles_name(GemmTiles::amx), "AMX tiles");
}

TEST(GemmOnTiles, EmulatedIsExactOnSmallIntegersForEveryTransposeAndShape) {
  check_exact(GemmTiles::amx_emulated);
}

TEST(GemmOnTiles, EmulatedIsWithinFp32SummationOfTheDoubleProduct) { check_random(GemmTiles::amx_emulated); }

TEST(GemmOnTiles, EmulatedRoundedOutputIsTheFp32OutputConvertedBitwise) { check_rounded(GemmTiles::amx_emulated); }

// Where the bf16 products run on the tile GEMM (CTest kernels_amx_gemm_emulated; skipped where
// oneDNN runs them), a forward product that keeps its output rounded stores it from the tile GEMM:
// the bits of the fp32 product the same context computes, rounded afterwards.
TEST(GemmOnTiles, ForwardRoundedProductStoresBf16FromTheTiles) {
  if (!ff::gemm_on_fivefold_tiles(ff::DType::bf16))
    GTEST_SKIP() << "the bf16 GEMMs run on oneDNN here (no AMX, or FIVEFOLD_AMX_GEMM=off): CTest "
                    "kernels_amx_gemm_emulated runs this";
  const int N = 37, in = 96, out = 80;
  std::vector<float> W = fftest::to_float(fftest::randn(size_t(out) * in, 11));
  const std::vector<float> x = fftest::to_float(fftest::randn(size_t(N) * in, 12));
  std::vector<uint16_t> x16(x.size());
  ff::convert_from_f32(ff::TypedPtr(x16.data(), ff::DType::bf16), x.data(), x.size());
  const ff::ConstTypedPtr a(x16.data(), ff::DType::bf16);
  ff::WeightCopy copy({{W.data(), W.size()}}, ff::DType::bf16);
  ff::GemmContext g{.input_dtype = ff::DType::bf16};
  g.twins.push_back(&copy);
  const ff::FreshWeightCopy fresh(&copy);
  std::vector<float> y32(size_t(N) * out), staging(y32.size(), -7.0f);
  ff::gemm_run_precision(g, false, true, N, out, in, 1.0f, a, in, W.data(), in, 0.0f, y32.data(), out);
  std::vector<uint16_t> want(y32.size()), got(y32.size(), 0xffff);
  ff::convert_from_f32(ff::TypedPtr(want.data(), ff::DType::bf16), y32.data(), y32.size());
  EXPECT_TRUE(ff::gemm_forward_rounded(g, ff::TypedPtr(got.data(), ff::DType::bf16), a, W.data(), N, out, in,
                                       staging.data()));
  EXPECT_EQ(got, want);
  for (float v : staging) ASSERT_EQ(v, -7.0f);  // no fp32 product went through the staging
  EXPECT_EQ(copy.packed().packings(), 0u);     // oneDNN's packed copies stood aside
}

TEST(GemmOnTiles, EmulatedOnThreeThreadsIsTheOneThreadResultBitwise) {
  // Work items are dealt out whole, each summed by one thread in step order, chunk after chunk:
  // the team's size changes who computes an item and how wide the column panels are, never the
  // order of a sum (here one thread cuts two panels and three threads three).
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  const Problem p = make_problem(true, false, Shape{80, 96, 700}, [&] { return nd(rng); });
  std::vector<float> one, three;
  {
    const fftest::ScopedThreads t(1);
    one = run(GemmTiles::amx_emulated, p, {1.0f, 1.0f});
  }
  {
    const fftest::ScopedThreads t(3);
    three = run(GemmTiles::amx_emulated, p, {1.0f, 1.0f});
  }
  for (size_t i = 0; i < one.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(one[i]), std::bit_cast<uint32_t>(three[i])) << i;
}

TEST(GemmOnTiles, HardwareIsExactOnIntegersWithinFp32SummationOnRandomOperandsAndRoundsAsConverted) {
  if (ff::attention_tiles() != ff::AttentionTiles::amx)
    GTEST_SKIP() << "this CPU has no AMX for fivefold's kernels (" << ff::attention_tiles_name(ff::attention_tiles())
                 << "); the same checks ran on the scalar model above";
  check_exact(GemmTiles::amx);
  check_random(GemmTiles::amx);
  check_rounded(GemmTiles::amx);
}

// The bf16 MFU ceiling: the tile unit's where this process may use AMX (one tdpbf16ps is 512
// vdpbf16ps' FLOPs; the unit runs one every 16 cycles, so well above the dot products' peak), and
// nothing to measure elsewhere; the GEMM ceiling is the tile unit's exactly where oneDNN's bf16
// GEMMs run on it.
TEST(Bf16Peak, TheTileUnitsPeakWhereAmxRunsAndNoneElsewhere) {
  const double tiles = ff::measure_amx_bf16_peak(), dots = ff::measure_bf16_dot_peak();
  if (ff::amx_tile_unit_usable()) {
    EXPECT_GT(tiles, 4 * dots) << "AMX tile peak " << tiles << " FLOP/s against the dot products' " << dots;
  } else {
    EXPECT_EQ(tiles, 0.0);
  }
  const double gemm = ff::measure_bf16_gemm_peak();
  if (ff::bf16_path() == ff::Bf16Path::amx && tiles > 0)
    EXPECT_GT(gemm, 4 * dots);
  else  // the dot products' loop measured again (two timings of one loop: not compared)
    EXPECT_EQ(gemm > 0, dots > 0);
}

}  // namespace
