// The bf16 flash attention kernels (flash_attention_bf16.h) against the fp32 ones.
//
// Tolerances come from the rounding, element by element, with u = 2^-8 the unit roundoff of bf16
// (8 significant bits, round to nearest even). A double-precision reference materialises every
// term of every output, so each element gets its own bound from the magnitudes of its terms:
//   out[r]  = sum_c P[r][c] v[c]            P rounded to bf16 for the product:  <= u sum |P v|
//   dv[c]   = sum_r P[r][c] dO[r]           P rounded:                          <= u sum |P dO|
//   dq[r]   = scale sum_c dS[r][c] k[c]     dS as hi + lo bf16 terms:           <= u^2 scale sum |dS k|
//   dk[c]   = scale sum_r dS[r][c] q[r]     the same:                           <= u^2 scale sum |dS q|
//   (dS rounded once, ff::DsTerms::one: u instead of u^2)
// and dS = P (dP - D_i) itself moves with D_i = dO.out where out carries P's rounding: that adds
// u scale sum P (sum_d |dO| sum |P v|) |k| (and |q|) to dq (dk), a loose worst case, so the
// representable-input test gives both backwards the fp32 forward's out and checks the forward's
// out on its own.
// On inputs exactly representable in bf16 those roundings are the only difference from the fp32
// kernel apart from fp32 summation order (a further 2^-14 of the same sums covers it, and 2^-14
// of the tensor's largest sum where a sum cancels exactly, e.g. dq of a row that sees one key),
// so the two kernels must agree within these bounds: a wrong mask, pairing or layout breaks them
// by orders of magnitude, and dS rounded once where two terms are set breaks the dq/dk bound. On
// arbitrary fp32 inputs q, k, v and dO are rounded too (u each): every term carries at most four
// rounded factors, the score's error 2u scale sum_d |q k| shifts P through the exponential, and
// dS = P (dP - D_i) = P dO.(v - out) inherits both; the bounds below add those (first order in
// u), with |dS| replaced by P sum_d |dO (v - out)| since a rounded dO moves each term of that
// dot product separately.
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "check.h"
#include "kernels/attention_block.h"
#include "kernels/flash_attention.h"
#include "kernels/convert.h"
#include "kernels/flash_attention_bf16.h"
#include "kernels/rope.h"

namespace {

using ff::AttentionBlock;
using ff::AttentionMask;
using fftest::randn;

constexpr double kU = 1.0 / 256;      // bf16 unit roundoff, 2^-8
constexpr double kSum = 1.0 / 16384;  // fp32 summation-order slack, 2^-14 of the same sums

// One case: q, k, v in one buffer (fused rows or separate blocks), a block's shape over it.
struct Case {
  AttentionBlock s;
  size_t q_off, k_off, v_off, size;
  bool plain;  // a whole causal sequence: the AttentionShape entries are tested too
  const char* name;
};

Case fused(int B, int T, int H, int Hkv, int D, const char* name) {
  const long w = long(H + 2 * Hkv) * D;
  Case c{ff::contiguous_block(B, T, T, H, Hkv, D, w, w),
         0,
         size_t(H) * D,
         size_t(H + Hkv) * D,
         size_t(B) * T * w,
         true,
         name};
  return c;
}

Case separate(int B, int Tq, int Tk, int H, int Hkv, int D, int q_pos, int k_pos, AttentionMask m,
              const char* name) {
  AttentionBlock s = ff::contiguous_block(B, Tq, Tk, H, Hkv, D, long(H) * D, long(Hkv) * D);
  s.q_pos = q_pos, s.k_pos = k_pos, s.mask = m;
  const size_t nq = size_t(B) * Tq * H * D, nkv = size_t(B) * Tk * Hkv * D;
  return {s, 0, nq, nq + nkv, nq + 2 * nkv, false, name};
}

std::vector<Case> cases() {
  return {
      fused(2, 150, 4, 2, 64, "causal GQA, T=150 (2 tiles + 22 rows), D=64, fused qkv"),
      fused(1, 37, 3, 3, 24, "causal MHA, T=37, D=24 (padded to 32), fused qkv"),
      separate(1, 70, 90, 2, 1, 32, 90, 20, AttentionMask::causal, "block, causal with offsets, MQA"),
      separate(2, 33, 71, 2, 2, 16, 200, 0, AttentionMask::full, "block, full, Tq != Tk"),
  };
}

size_t out_size(const AttentionBlock& s) { return size_t(s.B) * s.Tq * s.H * s.D; }
size_t lse_size(const AttentionBlock& s) { return size_t(s.B) * s.H * s.Tq; }
ff::AttentionShape shape(const AttentionBlock& s) {
  return {s.B, s.Tq, s.H, s.Hkv, s.D, int(s.q_row), int(s.kv_row)};
}

bool visible(const AttentionBlock& s, int i, int j) {
  if (s.mask == AttentionMask::none) return false;
  return s.mask == AttentionMask::full || s.k_pos + j <= s.q_pos + i;
}

// The double reference and, per element, the sum of its terms' magnitudes (the bounds above).
struct Ref {
  std::vector<double> out, grad;  // grad: dq, dk, dv in the input buffer's layout
  std::vector<double> b_out, b_grad;
  std::vector<double> b_grad_abs;  // the same with |dS| replaced by P sum_d |dO (v - out)| (>= |dS|)
  std::vector<char> is_v;          // grad elements that are dv (P terms), not dq/dk (dS terms)
  std::vector<double> b_grad_D;    // dq/dk: scale sum P |dD| |k or q| with |dD| <= sum_d |dO| b_out / u
  double score = 0;                // the largest scale * sum_d |q k| over visible pairs
};
Ref reference(const Case& c, const std::vector<double>& x, const std::vector<double>& dout) {
  const AttentionBlock& s = c.s;
  Ref r{std::vector<double>(out_size(s)), std::vector<double>(c.size), std::vector<double>(out_size(s)),
        std::vector<double>(c.size),      std::vector<double>(c.size), std::vector<char>(c.size),
        std::vector<double>(c.size)};
  const double scale = 1 / std::sqrt(double(s.D));
  std::vector<double> P(s.Tk), dS(s.Tk), dSa(s.Tk);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      const int g = h / (s.H / s.Hkv);
      auto Q = [&](int i) { return c.q_off + b * s.q_batch + i * s.q_row + h * s.D; };
      auto K = [&](int j) { return c.k_off + b * s.kv_batch + j * s.kv_row + g * s.D; };
      auto V = [&](int j) { return c.v_off + b * s.kv_batch + j * s.kv_row + g * s.D; };
      for (int i = 0; i < s.Tq; ++i) {
        const size_t o = b * s.o_batch + i * s.o_row + h * s.D;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < s.Tk; ++j) {
          if (!visible(s, i, j)) continue;
          double dot = 0, mag = 0;
          for (int d = 0; d < s.D; ++d)
            dot += x[Q(i) + d] * x[K(j) + d], mag += std::abs(x[Q(i) + d] * x[K(j) + d]);
          P[j] = dot * scale, mx = std::max(mx, P[j]);
          r.score = std::max(r.score, mag * scale);
        }
        for (int j = 0; j < s.Tk; ++j) P[j] = visible(s, i, j) ? std::exp(P[j] - mx) : 0, sum += P[j];
        double Di = 0;
        for (int j = 0; j < s.Tk; ++j) {
          P[j] = sum > 0 ? P[j] / sum : 0;
          for (int d = 0; d < s.D; ++d) {
            r.out[o + d] += P[j] * x[V(j) + d];
            r.b_out[o + d] += std::abs(P[j] * x[V(j) + d]);
          }
        }
        double Dmag = 0;  // D_i's error is at most u times this: out carries P's rounding
        for (int d = 0; d < s.D; ++d)
          Di += dout[o + d] * r.out[o + d], Dmag += std::abs(dout[o + d]) * r.b_out[o + d];
        for (int j = 0; j < s.Tk; ++j) {
          double dP = 0, spread = 0;
          for (int d = 0; d < s.D; ++d)
            dP += dout[o + d] * x[V(j) + d], spread += std::abs(dout[o + d] * (x[V(j) + d] - r.out[o + d]));
          dS[j] = P[j] * (dP - Di);
          dSa[j] = P[j] * spread;
        }
        for (int j = 0; j < s.Tk; ++j)
          for (int d = 0; d < s.D; ++d) {
            r.grad[Q(i) + d] += scale * dS[j] * x[K(j) + d];
            r.b_grad[Q(i) + d] += scale * std::abs(dS[j] * x[K(j) + d]);
            r.grad[K(j) + d] += scale * dS[j] * x[Q(i) + d];
            r.b_grad[K(j) + d] += scale * std::abs(dS[j] * x[Q(i) + d]);
            r.grad[V(j) + d] += P[j] * dout[o + d];
            r.b_grad[V(j) + d] += std::abs(P[j] * dout[o + d]);
            r.b_grad_abs[Q(i) + d] += scale * dSa[j] * std::abs(x[K(j) + d]);
            r.b_grad_abs[K(j) + d] += scale * dSa[j] * std::abs(x[Q(i) + d]);
            r.b_grad_abs[V(j) + d] += std::abs(P[j] * dout[o + d]);
            r.is_v[V(j) + d] = 1;
            r.b_grad_D[Q(i) + d] += scale * P[j] * Dmag * std::abs(x[K(j) + d]);
            r.b_grad_D[K(j) + d] += scale * P[j] * Dmag * std::abs(x[Q(i) + d]);
          }
      }
    }
  return r;
}

std::vector<double> round_bf16(std::vector<double> x) {
  for (auto& e : x) e = ff::bf16_to_f32(ff::f32_to_bf16(float(e)));
  return x;
}
std::vector<uint16_t> bits_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> b(x.size());
  for (size_t i = 0; i < x.size(); ++i) b[i] = ff::f32_to_bf16(x[i]);
  return b;
}

struct Result {
  std::vector<float> out, lse, grad;
  double flops = 0;  // what the block entries returned (forward and backward)
};

// The fp32 kernel (plain entries for a plain case, block entries otherwise).
Result run_fp32(const Case& c, const std::vector<float>& x, const std::vector<float>& dout) {
  Result r{std::vector<float>(out_size(c.s)), std::vector<float>(lse_size(c.s)), std::vector<float>(c.size)};
  const float *q = x.data() + c.q_off, *k = x.data() + c.k_off, *v = x.data() + c.v_off;
  float *dq = r.grad.data() + c.q_off, *dk = r.grad.data() + c.k_off, *dv = r.grad.data() + c.v_off;
  if (c.plain) {
    ff::attention_forward(r.out.data(), r.lse.data(), q, k, v, shape(c.s));
    ff::attention_backward(dq, dk, dv, dout.data(), q, k, v, r.out.data(), r.lse.data(), shape(c.s));
  } else {
    ff::attention_block_forward(r.out.data(), r.lse.data(), q, k, v, c.s);
    ff::attention_block_backward(dq, dk, dv, dout.data(), q, k, v, r.out.data(), r.lse.data(), c.s);
  }
  return r;
}

// The bf16 kernel on q/k/v and dout of either type; out is fp32 and fed back to the backward
// unless `given` (out and lse) is; dS enters the backward's products as `ds` says.
template <class X, class G>
Result run_bf16(const Case& c, const std::vector<X>& x, const std::vector<G>& dout, bool plain,
                const Result* given = nullptr, ff::DsTerms ds = ff::DsTerms::two) {
  constexpr ff::DType tx = sizeof(X) == 2 ? ff::DType::bf16 : ff::DType::f32;
  constexpr ff::DType tg = sizeof(G) == 2 ? ff::DType::bf16 : ff::DType::f32;
  Result r{std::vector<float>(out_size(c.s)), std::vector<float>(lse_size(c.s)), std::vector<float>(c.size)};
  const ff::ConstTypedPtr q(x.data() + c.q_off, tx), k(x.data() + c.k_off, tx), v(x.data() + c.v_off, tx);
  const ff::ConstTypedPtr d(dout.data(), tg);
  float *dq = r.grad.data() + c.q_off, *dk = r.grad.data() + c.k_off, *dv = r.grad.data() + c.v_off;
  const float* out = given ? given->out.data() : r.out.data();
  const float* lse = given ? given->lse.data() : r.lse.data();
  if (plain) {
    ff::attention_forward_bf16(r.out.data(), r.lse.data(), q, k, v, shape(c.s));
    ff::attention_backward_bf16(dq, dk, dv, d, q, k, v, out, lse, shape(c.s), ds);
  } else {
    r.flops = ff::attention_block_forward_bf16(r.out.data(), r.lse.data(), q, k, v, c.s);
    r.flops += ff::attention_block_backward_bf16(dq, dk, dv, d, q, k, v, out, lse, c.s, ds);
  }
  return r;
}

// Every |a - b| within limit(i) + kSum (bound[i] + max(bound)), bound the sum of the element's
// term magnitudes; returns the largest error / limit.
double expect_within(const std::vector<float>& a, const std::vector<float>& b,
                     const std::vector<double>& bound, const std::function<double(size_t)>& limit,
                     const char* what) {
  double worst = 0, floor = 0;
  for (double x : bound) floor = std::max(floor, kSum * x);
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(double(a[i]) - b[i]), lim = limit(i) + kSum * bound[i] + floor;
    worst = std::max(worst, err / lim);
    if (err > lim) {
      ADD_FAILURE() << what << " element " << i << ": bf16 " << a[i] << ", fp32 " << b[i] << ", bound "
                    << lim;
      return worst;
    }
  }
  return worst;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// Exactly representable inputs: only P and dS rounding (and summation order) separate the kernels.
// (Seen: worst error / bound 0.26 - 0.74 over the cases.)
TEST(FlashAttentionBf16, RepresentableInputsAgreeWithFp32WithinTheRoundingOfPAndDs) {
  for (ff::DsTerms terms : {ff::DsTerms::two, ff::DsTerms::one})
    for (const Case& c : cases()) {
      const bool two = terms == ff::DsTerms::two;
      SCOPED_TRACE(two ? "dS as hi + lo" : "dS rounded once");
      const double ds = two ? kU * kU : kU;  // dS's relative rounding in dQ and dK
      SCOPED_TRACE(c.name);
      const auto x = round_bf16(randn(c.size, 11)), dout = round_bf16(randn(out_size(c.s), 12));
      const Ref ref = reference(c, x, dout);
      const auto xf = fftest::to_float(x), df = fftest::to_float(dout);
      // The backward reads the fp32 kernel's out and lse, so D_i = dO.out is the same in both and
      // the gradients differ by the backward's own roundings alone.
      const Result want = run_fp32(c, xf, df), got = run_bf16(c, xf, df, c.plain, &want, terms);
      const auto& r = ref;
      const double wo = expect_within(
          got.out, want.out, r.b_out, [&](size_t i) { return kU * r.b_out[i]; }, "out");
      const double wg = expect_within(
          got.grad, want.grad, r.b_grad, [&](size_t i) { return (r.is_v[i] ? kU : ds) * r.b_grad[i]; },
          "dq/dk/dv");
      EXPECT_LT(max_abs_diff(got.lse, want.lse), 1e-5);  // lse is fp32 state from fp32 scores
      std::printf("  dS terms %d, %-55s worst error / bound: out %.2f, grads %.2f\n", two ? 2 : 1, c.name, wo,
                  wg);
    }
}

// Arbitrary fp32 inputs against the fp32 kernel on the same (unrounded) inputs.
TEST(FlashAttentionBf16, RandomInputsAgreeWithFp32WithinBf16Rounding) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto x = randn(c.size, 21), dout = randn(out_size(c.s), 22);
    const Ref ref = reference(c, x, dout);
    const auto xf = fftest::to_float(x), df = fftest::to_float(dout);
    const Result want = run_fp32(c, xf, df), got = run_bf16(c, xf, df, c.plain);
    // out: v (u), P (u), and P's relative shift by the score errors of its row (2 e, e = 2u score).
    const double e = 2 * kU * ref.score;
    const double wo = expect_within(
        got.out, want.out, ref.b_out, [&](size_t i) { return (2 * kU + 2 * e) * ref.b_out[i]; }, "out");
    // gradients: up to four rounded factors per term (u each), plus P's shift (2 e) carried into dS.
    const double wg = expect_within(
        got.grad, want.grad, ref.b_grad_abs,
        [&](size_t i) { return (4 * kU + 2 * e) * ref.b_grad_abs[i] + kU * ref.b_grad_D[i]; }, "dq/dk/dv");
    std::printf("  %-55s score %.2f; worst error / bound: out %.2f, grads %.2f\n", c.name, ref.score, wo, wg);
  }
}

// fp32 q, k, v and dout are rounded as they are packed (dout also for D_i = rowsum(dO o O)):
// bitwise the kernel on bf16 operands holding the rounded values. The plain entries equal the
// block entries on the same causal block.
TEST(FlashAttentionBf16, Fp32OperandsAreRoundedOnceBitwiseAsBf16Operands) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto xf = fftest::to_float(randn(c.size, 31)), df = fftest::to_float(randn(out_size(c.s), 32));
    const Result a = run_bf16(c, xf, df, c.plain), b = run_bf16(c, bits_bf16(xf), bits_bf16(df), c.plain);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
    EXPECT_EQ(a.grad, b.grad);
    if (c.plain) {
      const Result blk = run_bf16(c, xf, df, false);
      EXPECT_EQ(a.out, blk.out);
      EXPECT_EQ(a.grad, blk.grad);
    }
  }
}

// A bf16 out is the fp32 one rounded; the backward reads it (and D_i) as those values.
TEST(FlashAttentionBf16, Bf16OutputIsTheFp32OutputRounded) {
  const Case c = cases()[0];
  const auto xf = fftest::to_float(randn(c.size, 41));
  const ff::ConstTypedPtr q(xf.data() + c.q_off), k(xf.data() + c.k_off), v(xf.data() + c.v_off);
  std::vector<float> out(out_size(c.s)), lse(lse_size(c.s)), lse16(lse.size());
  std::vector<uint16_t> out16(out.size());
  ff::attention_forward_bf16(out.data(), lse.data(), q, k, v, shape(c.s));
  ff::attention_forward_bf16(ff::TypedPtr(out16.data(), ff::DType::bf16), lse16.data(), q, k, v, shape(c.s));
  EXPECT_EQ(out16, bits_bf16(out));
  EXPECT_EQ(lse16, lse);
}

TEST(FlashAttentionBf16, RefusesF16OperandsNamingThem) {
  const Case c = cases()[1];
  std::vector<uint16_t> x(c.size);
  std::vector<float> out(out_size(c.s)), lse(lse_size(c.s));
  const ff::ConstTypedPtr q(x.data(), ff::DType::f16);
  try {
    ff::attention_forward_bf16(out.data(), lse.data(), q, q, q, shape(c.s));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q is f16"), std::string::npos) << e.what();
  }
}

// Results do not depend on the thread count; the block entries return FLOPs like the fp32 ones.
TEST(FlashAttentionBf16, DeterministicAcrossThreadsAndReturnsBlockFlops) {
  const Case c = cases()[2];
  const auto xf = fftest::to_float(randn(c.size, 51)), df = fftest::to_float(randn(out_size(c.s), 52));
  Result one, two;
  {
    const fftest::ScopedThreads t(1);
    one = run_bf16(c, xf, df, false);
  }
  {
    const fftest::ScopedThreads t(2);
    two = run_bf16(c, xf, df, false);
  }
  EXPECT_EQ(one.out, two.out);
  EXPECT_EQ(one.grad, two.grad);
  EXPECT_DOUBLE_EQ(two.flops, ff::block_forward_flops(c.s) + ff::block_backward_flops(c.s));
}

}  // namespace

// attention_backward_bf16_into overwrites dq, dk, dv: on buffers holding NaN it gives bitwise what
// the accumulating entry gives on zeroed ones (what the model did before: zero, then add), and
// the accumulating entry still adds to what is there.
TEST(FlashAttentionBf16, OverwritingBackwardIsBitwiseZeroingThenAccumulating) {
  for (const Case& c : cases()) {
    if (!c.plain) continue;  // the entry takes whole causal sequences
    SCOPED_TRACE(c.name);
    const auto x = fftest::to_float(randn(c.size, 51)), dout = fftest::to_float(randn(out_size(c.s), 52));
    const ff::ConstTypedPtr q(x.data() + c.q_off), k(x.data() + c.k_off), v(x.data() + c.v_off);
    std::vector<float> out(out_size(c.s)), lse(lse_size(c.s));
    ff::attention_forward_bf16(out.data(), lse.data(), q, k, v, shape(c.s));
    std::vector<float> zeroed(c.size, 0.0f), poisoned(c.size, NAN), base = fftest::to_float(randn(c.size, 53));
    std::vector<float> added = base;
    auto grads = [&](std::vector<float>& g, bool into) {
      float *dq = g.data() + c.q_off, *dk = g.data() + c.k_off, *dv = g.data() + c.v_off;
      const ff::ConstTypedPtr d(dout.data()), o(out.data());
      if (into) ff::attention_backward_bf16_into(dq, dk, dv, d, q, k, v, o, lse.data(), shape(c.s));
      else ff::attention_backward_bf16(dq, dk, dv, d, q, k, v, o, lse.data(), shape(c.s));
    };
    grads(zeroed, false);
    grads(poisoned, true);
    grads(added, false);
    ASSERT_EQ(std::memcmp(zeroed.data(), poisoned.data(), c.size * sizeof(float)), 0);
    // (The compiler may fuse the product into the addition: within a rounding of the sum.)
    for (size_t i = 0; i < c.size; ++i)
      ASSERT_NEAR(added[i], base[i] + zeroed[i], 1e-6 * (std::abs(base[i]) + std::abs(zeroed[i]))) << i;
  }
}

// attention_backward_bf16_rope_rounded: the overwriting backward, then RoPE's backward rounding the
// fused q/k/v gradient (what a bf16 q/k/v GEMM reads), in one pass: bitwise the two passes.
TEST(FlashAttentionBf16, RopeRoundedBackwardIsBitwiseOverwriteThenRopeBackwardRounded) {
  for (const Case& c : cases()) {
    if (!c.plain) continue;
    SCOPED_TRACE(c.name);
    const AttentionBlock& s = c.s;
    const int D = s.D, H = s.H, Hkv = s.Hkv, row = int(s.q_row);
    const auto x = fftest::to_float(randn(c.size, 61)), dout = fftest::to_float(randn(out_size(s), 62));
    const ff::ConstTypedPtr q(x.data() + c.q_off), k(x.data() + c.k_off), v(x.data() + c.v_off);
    std::vector<float> out(out_size(s)), lse(lse_size(s)), cos(size_t(s.Tq) * D / 2), sin(cos.size());
    ff::rope_tables(cos.data(), sin.data(), s.Tq, D, 10000.0f);
    ff::attention_forward_bf16(out.data(), lse.data(), q, k, v, shape(s));
    // The two passes.
    std::vector<float> g(c.size, NAN);
    ff::attention_backward_bf16_into(g.data() + c.q_off, g.data() + c.k_off, g.data() + c.v_off,
                                     ff::ConstTypedPtr(dout.data()), q, k, v, ff::ConstTypedPtr(out.data()), lse.data(),
                                     shape(s));
    std::vector<uint16_t> want(c.size, 0xffff), got(c.size, 0xffff);
    ff::rope_backward_rounded(ff::TypedPtr(want.data(), ff::DType::bf16), g.data(), cos.data(), sin.data(), s.B,
                              s.Tq, H, Hkv, D, row);
    // One.
    const ff::TypedPtr g16(got.data(), ff::DType::bf16);
    ff::attention_backward_bf16_rope_rounded(g16.at(c.q_off), g16.at(c.k_off), g16.at(c.v_off),
                                             ff::ConstTypedPtr(dout.data()), q, k, v, ff::ConstTypedPtr(out.data()),
                                             lse.data(), shape(s), cos.data(), sin.data());
    EXPECT_EQ(got, want);
    // The rotation took part: unrotated, the q and k columns would differ.
    std::vector<uint16_t> plain(c.size);
    ff::convert_from_f32(ff::TypedPtr(plain.data(), ff::DType::bf16), g.data(), c.size);
    size_t moved = 0;
    for (size_t i = 0; i < c.size; ++i) moved += plain[i] != got[i];
    EXPECT_GT(moved, c.size / 4);
  }
}

TEST(FlashAttentionBf16, RopeRoundedBackwardRefusesAnFp32Output) {
  const Case c = cases()[0];
  std::vector<float> x(c.size), out(out_size(c.s)), lse(lse_size(c.s)), cs(size_t(c.s.Tq) * c.s.D / 2);
  const ff::ConstTypedPtr p(x.data());
  try {
    ff::attention_backward_bf16_rope_rounded(ff::TypedPtr(x.data()), ff::TypedPtr(x.data()), ff::TypedPtr(x.data()),
                                             ff::ConstTypedPtr(out.data()), p, p, p, ff::ConstTypedPtr(out.data()),
                                             lse.data(), shape(c.s), cs.data(), cs.data());
    FAIL() << "an fp32 output was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("must be bf16"), std::string::npos) << e.what();
  }
}
