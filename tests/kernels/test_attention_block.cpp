// The block attention kernel (ring attention's unit): every mask mode with position offsets
// against a naive double-precision reference, forward and backward; the blocks of a sequence
// merged by log-sum-exp against the whole-sequence flash kernel; the FLOPs each block returns.
#include "check.h"
#include "kernels/attention_block.h"
#include "kernels/flash_attention.h"

namespace {

using ff::AttentionBlock;
using ff::AttentionMask;
using fftest::randn;
using fftest::to_float;

struct Case {
  AttentionBlock s;
  const char* name;
};

// Separate, contiguous q (B, Tq, H, D), k and v (B, Tk, Hkv, D).
Case make(int B, int Tq, int Tk, int H, int Hkv, int D, int q_pos, int k_pos, AttentionMask mask, const char* name) {
  AttentionBlock s = ff::contiguous_block(B, Tq, Tk, H, Hkv, D, long(H) * D, long(Hkv) * D);
  s.q_pos = q_pos, s.k_pos = k_pos, s.mask = mask;
  return {s, name};
}

std::vector<Case> cases() {
  return {
      make(2, 37, 37, 4, 2, 16, 0, 0, AttentionMask::causal, "diagonal, GQA, one partial tile"),
      make(1, 70, 45, 2, 1, 24, 100, 80, AttentionMask::causal, "causal with offsets: partly visible"),
      make(1, 20, 90, 2, 2, 16, 60, 0, AttentionMask::causal, "causal, keys ending past the queries"),
      make(2, 33, 71, 4, 2, 16, 200, 0, AttentionMask::full, "full, Tq != Tk, two key tiles"),
      make(1, 16, 16, 2, 1, 80, 0, 64, AttentionMask::causal, "causal, every key after every query"),
      make(1, 8, 8, 2, 1, 16, 8, 0, AttentionMask::none, "none"),
  };
}

size_t nq(const AttentionBlock& s) { return size_t(s.B) * s.Tq * s.H * s.D; }
size_t nkv(const AttentionBlock& s) { return size_t(s.B) * s.Tk * s.Hkv * s.D; }
size_t nl(const AttentionBlock& s) { return size_t(s.B) * s.H * s.Tq; }

bool visible(const AttentionBlock& s, int i, int j) {
  if (s.mask == AttentionMask::none) return false;
  return s.mask == AttentionMask::full || s.k_pos + j <= s.q_pos + i;
}

// The textbook definition with every score row materialised, and its closed-form gradient.
struct Naive {
  std::vector<double> out, lse, dq, dk, dv;
};
Naive naive(const AttentionBlock& s, const std::vector<double>& q, const std::vector<double>& k,
            const std::vector<double>& v, const std::vector<double>& dout) {
  Naive r{std::vector<double>(nq(s)), std::vector<double>(nl(s)), std::vector<double>(nq(s)),
          std::vector<double>(nkv(s)), std::vector<double>(nkv(s))};
  const double scale = 1 / std::sqrt(double(s.D));
  std::vector<double> p(s.Tk);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      const int g = h / (s.H / s.Hkv);
      for (int i = 0; i < s.Tq; ++i) {
        const double* qi = &q[((size_t(b) * s.Tq + i) * s.H + h) * s.D];
        auto kv = [&](const std::vector<double>& x, int j) { return &x[((size_t(b) * s.Tk + j) * s.Hkv + g) * s.D]; };
        double mx = -INFINITY;
        for (int j = 0; j < s.Tk; ++j) {
          if (!visible(s, i, j)) continue;
          double dot = 0;
          for (int d = 0; d < s.D; ++d) dot += qi[d] * kv(k, j)[d];
          mx = std::max(mx, p[j] = dot * scale);
        }
        double sum = 0;
        for (int j = 0; j < s.Tk; ++j) sum += visible(s, i, j) ? (p[j] = std::exp(p[j] - mx)) : 0;
        const size_t o = ((size_t(b) * s.Tq + i) * s.H + h) * s.D;
        r.lse[(size_t(b) * s.H + h) * s.Tq + i] = sum > 0 ? mx + std::log(sum) : -INFINITY;
        if (sum == 0) continue;
        for (int j = 0; j < s.Tk; ++j)
          if (visible(s, i, j))
            for (int d = 0; d < s.D; ++d) r.out[o + d] += p[j] / sum * kv(v, j)[d];
        double Di = 0;
        for (int d = 0; d < s.D; ++d) Di += dout[o + d] * r.out[o + d];
        for (int j = 0; j < s.Tk; ++j) {
          if (!visible(s, i, j)) continue;
          const double P = p[j] / sum;
          double dP = 0;
          for (int d = 0; d < s.D; ++d) dP += dout[o + d] * kv(v, j)[d];
          const double dS = P * (dP - Di) * scale;
          const size_t kj = ((size_t(b) * s.Tk + j) * s.Hkv + g) * s.D;
          for (int d = 0; d < s.D; ++d) {
            r.dv[kj + d] += P * dout[o + d];
            r.dk[kj + d] += dS * qi[d];
            r.dq[o + d] += dS * kv(k, j)[d];
          }
        }
      }
    }
  return r;
}

template <class T>
void run(const AttentionBlock& s, const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
         const std::vector<T>& dout, std::vector<T>& out, std::vector<T>& lse, std::vector<T>& dq,
         std::vector<T>& dk, std::vector<T>& dv) {
  out.assign(nq(s), T(7)), lse.assign(nl(s), T(7));  // overwritten, whatever they held
  dq.assign(nq(s), T(0)), dk.assign(nkv(s), T(0)), dv.assign(nkv(s), T(0));
  ff::attention_block_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s);
  ff::attention_block_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                               out.data(), lse.data(), s);
}

// lse of -inf (a row that saw nothing) must come out as -inf; elsewhere a relative error.
template <class A>
double lse_err(const std::vector<A>& a, const std::vector<double>& b) {
  std::vector<double> fa, fb;
  for (size_t i = 0; i < b.size(); ++i) {
    if (std::isinf(b[i])) {
      if (!(std::isinf(double(a[i])) && a[i] < 0)) return INFINITY;
      continue;
    }
    fa.push_back(double(a[i])), fb.push_back(b[i]);
  }
  return fb.empty() ? 0.0 : fftest::max_rel_err(fa, fb);
}

TEST(AttentionBlock, EveryMaskModeMatchesNaiveForwardAndBackward) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto& s = c.s;
    const auto q = randn(nq(s), 1), k = randn(nkv(s), 2), v = randn(nkv(s), 3), dout = randn(nq(s), 4);
    const Naive want = naive(s, q, k, v, dout);
    std::vector<double> out, lse, dq, dk, dv;
    run(s, q, k, v, dout, out, lse, dq, dk, dv);
    if (s.mask == AttentionMask::none || (s.mask == AttentionMask::causal && s.k_pos > s.q_pos + s.Tq)) {
      for (double x : out) ASSERT_EQ(x, 0.0);  // nothing visible: zeros, not NaN
      for (double x : dk) ASSERT_EQ(x, 0.0);
    }
    const auto err = [](const std::vector<double>& a, const std::vector<double>& b) {
      double bmax = 0, amax = 0;
      for (size_t i = 0; i < b.size(); ++i) bmax = std::max(bmax, std::abs(b[i])), amax = std::max(amax, std::abs(a[i]));
      return bmax == 0 ? amax : fftest::max_rel_err(a, b);  // all zero: the error is absolute
    };
    EXPECT_LT(err(out, want.out), 1e-12);
    EXPECT_LT(lse_err(lse, want.lse), 1e-12);
    EXPECT_LT(err(dq, want.dq), 1e-12);
    EXPECT_LT(err(dk, want.dk), 1e-12);
    EXPECT_LT(err(dv, want.dv), 1e-12);
    std::vector<float> outf, lsef, dqf, dkf, dvf;
    run(s, to_float(q), to_float(k), to_float(v), to_float(dout), outf, lsef, dqf, dkf, dvf);
    EXPECT_LT(err(std::vector<double>(outf.begin(), outf.end()), want.out), 3e-6);
    EXPECT_LT(lse_err(lsef, want.lse), 3e-6);
    EXPECT_LT(err(std::vector<double>(dqf.begin(), dqf.end()), want.dq), 1e-5);
    EXPECT_LT(err(std::vector<double>(dkf.begin(), dkf.end()), want.dk), 1e-5);
    EXPECT_LT(err(std::vector<double>(dvf.begin(), dvf.end()), want.dv), 1e-5);
  }
}

// A causal sequence of T tokens cut into chunks: each query chunk attends to every key chunk
// with its positions (diagonal, full before, none after), the partial results merge by
// log-sum-exp and the backward of every block, with the merged out and lse, adds up to the
// whole-sequence flash kernel's, in fp32, to 1e-6. The FLOPs the blocks return add up to the
// causal triangle's, exactly, forward and backward.
TEST(AttentionBlock, MergedChunksEqualWholeSequenceAttention) {
  const int B = 2, T = 96, H = 4, Hkv = 2, D = 16;
  const std::vector<int> cuts = {0, 24, 40, 77, 96};  // uneven, crossing tile edges
  const int w = (H + 2 * Hkv) * D;                    // fused qkv rows as the model lays them out
  const auto x = to_float(randn(size_t(B) * T * w, 11)), dout = to_float(randn(size_t(B) * T * H * D, 12));
  const float *q = x.data(), *k = q + H * D, *v = k + Hkv * D;
  std::vector<float> want(size_t(B) * T * H * D), want_lse(size_t(B) * H * T), want_g(x.size(), 0.0f);
  const ff::AttentionShape whole{B, T, H, Hkv, D, w, w};
  ff::attention_forward(want.data(), want_lse.data(), q, k, v, whole);
  ff::attention_backward(want_g.data(), want_g.data() + H * D, want_g.data() + (H + Hkv) * D, dout.data(), q, k,
                         v, want.data(), want_lse.data(), whole);

  std::vector<float> out(want.size()), lse(want_lse.size(), -INFINITY), part(want.size()), part_lse(lse.size());
  std::fill(out.begin(), out.end(), 0.0f);
  const ff::MergeLayout acc{B, T, H, D, long(T) * H * D, long(H) * D, long(H) * T, T};
  auto block = [&](size_t qi, size_t kj) {
    AttentionBlock s{};
    s.B = B, s.H = H, s.Hkv = Hkv, s.D = D;
    s.Tq = cuts[qi + 1] - cuts[qi], s.Tk = cuts[kj + 1] - cuts[kj];
    s.q_row = s.kv_row = w, s.q_batch = s.kv_batch = long(T) * w;
    s.o_row = long(H) * D, s.o_batch = long(T) * H * D, s.l_head = T, s.l_batch = long(H) * T;
    s.q_pos = cuts[qi], s.k_pos = cuts[kj];
    s.mask = kj < qi ? AttentionMask::full : kj == qi ? AttentionMask::causal : AttentionMask::none;
    return s;
  };
  double done_flops = 0, expected_flops = 0;
  for (size_t qi = 0; qi + 1 < cuts.size(); ++qi)
    for (size_t kj = 0; kj + 1 < cuts.size(); ++kj) {
      AttentionBlock s = block(qi, kj);
      const long qo = long(cuts[qi]), ko = long(cuts[kj]);
      // The part is written at the chunk's rows of full-size buffers, then merged there.
      done_flops += ff::attention_block_forward(part.data() + qo * H * D, part_lse.data() + qo, q + qo * w,
                                                k + ko * w, v + ko * w, s);
      ff::MergeLayout lay{B, s.Tq, H, D, acc.o_batch, acc.o_row, acc.l_batch, acc.l_head};
      ff::attention_merge(out.data() + qo * H * D, lse.data() + qo, lay, part.data() + qo * H * D,
                          part_lse.data() + qo, lay);
      expected_flops += ff::block_forward_flops(s);
    }
  EXPECT_EQ(done_flops, expected_flops);
  EXPECT_EQ(expected_flops, 4.0 * D * H * B * (T * (T + 1) / 2));  // the causal triangle, exactly
  const std::vector<double> wd(want.begin(), want.end()), wl(want_lse.begin(), want_lse.end());
  EXPECT_LT(fftest::max_rel_err(out, wd), 1e-6);
  EXPECT_LT(fftest::max_rel_err(lse, wl), 1e-6);

  std::vector<float> g(x.size(), 0.0f);
  double backward_flops = 0;
  for (size_t qi = 0; qi + 1 < cuts.size(); ++qi)
    for (size_t kj = 0; kj <= qi; ++kj) {
      AttentionBlock s = block(qi, kj);
      const long qo = long(cuts[qi]), ko = long(cuts[kj]);
      backward_flops += ff::attention_block_backward(
          g.data() + qo * w, g.data() + ko * w + H * D, g.data() + ko * w + (H + Hkv) * D, dout.data() + qo * H * D,
          q + qo * w, k + ko * w, v + ko * w, out.data() + qo * H * D, lse.data() + qo, s);
    }
  EXPECT_EQ(backward_flops, 10.0 * D * H * B * (T * (T + 1) / 2));
  EXPECT_LT(fftest::max_rel_err(g, std::vector<double>(want_g.begin(), want_g.end())), 1e-6);
}

}  // namespace
