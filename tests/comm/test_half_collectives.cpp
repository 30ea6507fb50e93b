// bf16 and f16 reductions accumulate in fp32: every contribution is widened, summed in the fixed
// order of the algorithm and rounded once. The closed form: rank 0 contributes a large value B
// (a power of two times 1, 2 or 4), every other rank 1 or 2. The exact sum is an integer below
// 2^24, so fp32 holds it exactly and the expected result is the sum rounded once (round_ref.h).
// Accumulating in 16 bits instead loses the small addends (256 + 1 rounds back to 256 in bf16),
// which the test shows it would detect (from 3 ranks on; with 2 there is one addition only).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "mpi_test_util.h"
#include "round_ref.h"

using namespace ff;
using ff::test::world;

namespace {

struct Half {
  DType dtype;
  test::FloatFormat format;
  double big;  // its spacing is 2: a lone +1 on top of it is a tie
};
const Half kHalves[] = {{DType::bf16, test::kBfloat16, 256.0}, {DType::f16, test::kBinary16, 2048.0}};

uint16_t encode(double v, DType t) { return t == DType::bf16 ? f32_to_bf16(float(v)) : f32_to_f16(float(v)); }
double decode(uint16_t h, DType t) { return t == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h); }

// Rank q's contribution to element i, exact in 16 bits.
double contribution(const Half& h, int q, size_t i) {
  return q == 0 ? h.big * double(1 << (i % 3)) : double(1 + (size_t(q) + i) % 2);
}

double exact_sum(const Half& h, int p, size_t i) {
  double s = 0;
  for (int q = 0; q < p; ++q) s += contribution(h, q, i);
  return s;
}

// What a 16-bit accumulator would give: the owner c of the element's chunk starts from its own
// contribution and adds c-1, c-2, ... (mod p), rounding after every addition.
double sum_in_16_bits(const Half& h, int p, size_t i, size_t n) {
  int c = 0;
  while (i >= chunk_range(n, p, c).offset + chunk_range(n, p, c).count) ++c;
  double acc = contribution(h, c, i);
  for (int k = 1; k < p; ++k) acc = test::round_ref(acc + contribution(h, (c - k + p) % p, i), h.format);
  return acc;
}

std::vector<uint16_t> inputs(const Half& h, int r, size_t n) {
  std::vector<uint16_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = encode(contribution(h, r, i), h.dtype);
  return x;
}

// 3000017 elements: no group size divides it and every chunk spans two or more 1 MiB segments.
const size_t kSizes[] = {1, 13, 1000, 3000017};

}  // namespace

TEST(HalfCollectives, AllReduceSumAccumulatesInF32AndRoundsOnce) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (const Half& h : kHalves) {
    for (bool async : {false, true}) {
      for (size_t n : kSizes) {
        std::vector<uint16_t> x = inputs(h, r, n);
        TypedPtr data(x.data(), h.dtype);
        if (async) w.all_reduce_async(data, n).wait();
        else w.all_reduce(data, n);
        size_t bad = 0, distinguishing = 0;
        for (size_t i = 0; i < n; ++i) {
          double want = test::round_ref(exact_sum(h, p, i), h.format);
          bad += decode(x[i], h.dtype) != want;
          distinguishing += sum_in_16_bits(h, p, i, n) != want;
        }
        EXPECT_EQ(bad, 0u) << dtype_name(h.dtype) << " n=" << n << " async=" << async;
        // The closed form must tell the two apart wherever a second addition exists.
        if (p >= 3 && n >= 13) {
          EXPECT_GT(distinguishing, n / 4) << dtype_name(h.dtype) << " n=" << n;
        }
      }
    }
  }
}

TEST(HalfCollectives, ReduceScatterSumAccumulatesInF32AndRoundsOnce) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (const Half& h : kHalves) {
    for (bool async : {false, true}) {
      for (size_t n : kSizes) {
        std::vector<uint16_t> in = inputs(h, r, n);
        ChunkRange c = chunk_range(n, p, r);
        std::vector<uint16_t> out(c.count + 1, 0x1234);  // a sentinel past the chunk
        ConstTypedPtr src(in.data(), h.dtype);
        TypedPtr dst(out.data(), h.dtype);
        if (async) w.reduce_scatter_async(src, dst, n).wait();
        else w.reduce_scatter(src, dst, n);
        size_t bad = 0;
        for (size_t i = 0; i < c.count; ++i)
          bad += decode(out[i], h.dtype) != test::round_ref(exact_sum(h, p, c.offset + i), h.format);
        EXPECT_EQ(bad, 0u) << dtype_name(h.dtype) << " n=" << n << " async=" << async;
        EXPECT_EQ(out[c.count], 0x1234) << "wrote past the chunk, n=" << n;
      }
    }
  }
}

TEST(HalfCollectives, InPlaceReduceScatterThenAllGatherEqualsAllReduce) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  size_t n = 1500007;
  for (const Half& h : kHalves) {
    std::vector<uint16_t> a = inputs(h, r, n), b = a;
    ChunkRange c = chunk_range(n, p, r);
    w.all_reduce(TypedPtr(a.data(), h.dtype), n);
    TypedPtr flat(b.data(), h.dtype);
    w.reduce_scatter(flat, flat.at(c.offset), n);
    w.all_gather(flat.at(c.offset), flat, n);
    EXPECT_EQ(a, b) << dtype_name(h.dtype);
  }
}

TEST(HalfCollectives, MaxAndMinPickTheExtremeContribution) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  for (const Half& h : kHalves) {
    for (size_t n : {size_t(13), size_t(1200001)}) {
      // The winner rotates with i; values are small integers and halves, negative for odd i.
      auto value = [&](int q, size_t i) {
        double v = double(test::rotating<int>(q, p, i)) + 0.5 * double(i % 2);
        return i % 2 ? -v : v;
      };
      std::vector<uint16_t> hi(n), lo(n);
      for (size_t i = 0; i < n; ++i) hi[i] = lo[i] = encode(value(r, i), h.dtype);
      w.all_reduce(TypedPtr(hi.data(), h.dtype), n, ReduceOp::max);
      w.all_reduce_async(TypedPtr(lo.data(), h.dtype), n, ReduceOp::min).wait();
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        double top = value(0, i), bottom = value(0, i);
        for (int q = 1; q < p; ++q) {
          top = std::max(top, value(q, i));
          bottom = std::min(bottom, value(q, i));
        }
        bad += decode(hi[i], h.dtype) != top;
        bad += decode(lo[i], h.dtype) != bottom;
      }
      EXPECT_EQ(bad, 0u) << dtype_name(h.dtype) << " n=" << n;
    }
  }
}

TEST(HalfCollectives, BytesMoveUnchangedAndStatsCountTwoBytesPerElement) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  size_t n = 1001;
  // Broadcast and all-gather do no arithmetic: NaN payloads and -0 arrive bit for bit.
  std::vector<uint16_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = uint16_t(w.size() - 1 == r ? 0x7e01 + i % 7 : 0);
  w.reset_stats();
  w.broadcast(TypedPtr(x.data(), DType::f16), n, p - 1);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += x[i] != 0x7e01 + i % 7;
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(w.stats().bytes_of(CommOpKind::broadcast), r == p - 1 ? 2 * n : 0u);
  std::vector<uint16_t> chunk(chunk_range(n, p, r).count, 0x8000), full(n, 1);
  w.all_gather(ConstTypedPtr(chunk.data(), DType::bf16), TypedPtr(full.data(), DType::bf16), n);
  EXPECT_EQ(full, std::vector<uint16_t>(n, 0x8000));
  EXPECT_EQ(w.stats().bytes_of(CommOpKind::all_gather), 2 * chunk.size());
}

TEST(HalfCollectives, MismatchedElementTypesAreRejected) {
  Comm& w = world();
  std::vector<uint16_t> in(8);
  std::vector<float> out(8);
  try {
    w.reduce_scatter(ConstTypedPtr(in.data(), DType::bf16), out.data(), 8 * size_t(w.size()));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("in holds bf16 but out holds f32"), std::string::npos) << e.what();
  }
}
