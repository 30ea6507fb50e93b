// Document-masked attention (packed sequences): the fp32, fp64 and bf16 kernels given per-row
// document ids against a direct double-precision masked softmax written here, with boundaries
// inside tiles and on tile edges, whole sequences and offset blocks (context parallelism's unit);
// the skipped tiles against a count by brute force over the tile pairs.
#include <cstdint>
#include <vector>

#include "check.h"
#include "core/dtype.h"
#include "kernels/attention_block.h"
#include "kernels/flash_attention.h"
#include "kernels/flash_attention_bf16.h"

namespace {

using ff::AttentionBlock;
using ff::AttentionMask;
using fftest::randn;

// Document ids of one row of T tokens with documents starting at `starts` (0 implied).
std::vector<int32_t> doc_row(int T, const std::vector<int>& starts) {
  std::vector<int32_t> d(size_t(T), 0);
  int id = 0;
  for (int t = 0; t < T; ++t) {
    for (int st : starts)
      if (st == t && t > 0) ++id;
    d[size_t(t)] = id;
  }
  return d;
}

// Ids for B rows, each with its own boundaries: inside tiles, on the tile edges 64 and 128, a
// one-token document, and a row that is one document.
std::vector<int32_t> docs_for(int B, int T) {
  const std::vector<std::vector<int>> starts = {
      {10, 64, 100, 101, 128}, {33, 63, 65, 129}, {}, {1, 2, 64, 127}};
  std::vector<int32_t> all;
  for (int b = 0; b < B; ++b) {
    const auto row = doc_row(T, starts[size_t(b) % starts.size()]);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
};

// The textbook masked attention over contiguous q (B, Tq, H, D), k/v (B, Tk, Hkv, D): query i sees
// key j iff the mask lets it (by global position) and both carry the same document id.
Ref reference(const AttentionBlock& s, const std::vector<int32_t>& qd, const std::vector<int32_t>& kd,
              const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
              const std::vector<double>& dout) {
  const size_t nq = size_t(s.B) * s.Tq * s.H * s.D, nkv = size_t(s.B) * s.Tk * s.Hkv * s.D;
  Ref r{std::vector<double>(nq), std::vector<double>(size_t(s.B) * s.H * s.Tq), std::vector<double>(nq),
        std::vector<double>(nkv), std::vector<double>(nkv)};
  const double scale = 1 / std::sqrt(double(s.D));
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      const int g = h / (s.H / s.Hkv);
      for (int i = 0; i < s.Tq; ++i) {
        std::vector<int> keys;
        for (int j = 0; j < s.Tk; ++j) {
          const bool by_mask = s.mask == AttentionMask::full ||
                               (s.mask == AttentionMask::causal && s.k_pos + j <= s.q_pos + i);
          if (by_mask && qd[size_t(b) * s.Tq + i] == kd[size_t(b) * s.Tk + j]) keys.push_back(j);
        }
        const size_t o = ((size_t(b) * s.Tq + i) * s.H + h) * s.D;
        const size_t li = (size_t(b) * s.H + h) * s.Tq + i;
        if (keys.empty()) {
          r.lse[li] = -INFINITY;
          continue;
        }
        auto at = [&](int j) { return ((size_t(b) * s.Tk + j) * s.Hkv + g) * s.D; };
        std::vector<double> p(keys.size());
        double mx = -INFINITY;
        for (size_t n = 0; n < keys.size(); ++n) {
          double dot = 0;
          for (int d = 0; d < s.D; ++d) dot += q[o + d] * k[at(keys[n]) + d];
          mx = std::max(mx, p[n] = dot * scale);
        }
        double sum = 0;
        for (auto& x : p) sum += (x = std::exp(x - mx));
        r.lse[li] = mx + std::log(sum);
        for (size_t n = 0; n < keys.size(); ++n)
          for (int d = 0; d < s.D; ++d) r.out[o + d] += p[n] / sum * v[at(keys[n]) + d];
        double Di = 0;
        for (int d = 0; d < s.D; ++d) Di += dout[o + d] * r.out[o + d];
        for (size_t n = 0; n < keys.size(); ++n) {
          const double P = p[n] / sum;
          double dP = 0;
          for (int d = 0; d < s.D; ++d) dP += dout[o + d] * v[at(keys[n]) + d];
          const double dS = P * (dP - Di) * scale;
          for (int d = 0; d < s.D; ++d) {
            r.dv[at(keys[n]) + d] += P * dout[o + d];
            r.dk[at(keys[n]) + d] += dS * q[o + d];
            r.dq[o + d] += dS * k[at(keys[n]) + d];
          }
        }
      }
    }
  return r;
}

// Key tiles the causal / full mask reaches for each query tile, split by whether any pair in the
// tile is in one document: what the kernels must report as visited and skipped (per head and row).
ff::AttentionTileCounts brute_force_tiles(const AttentionBlock& s, const std::vector<int32_t>& qd,
                                          const std::vector<int32_t>& kd) {
  ff::AttentionTileCounts c;
  for (int b = 0; b < s.B; ++b)
    for (int i0 = 0; i0 < s.Tq; i0 += 64)
      for (int j0 = 0; j0 < s.Tk; j0 += 64) {
        bool reach = false, same = false;
        for (int i = i0; i < std::min(i0 + 64, s.Tq); ++i)
          for (int j = j0; j < std::min(j0 + 64, s.Tk); ++j) {
            const bool by_mask = s.mask == AttentionMask::full ||
                                 (s.mask == AttentionMask::causal && s.k_pos + j <= s.q_pos + i);
            reach = reach || by_mask;
            same = same || (by_mask && qd[size_t(b) * s.Tq + i] == kd[size_t(b) * s.Tk + j]);
          }
        if (reach) ++(same ? c.visited : c.skipped);
      }
  return c;
}

double rel(const std::vector<double>& a, const std::vector<double>& b) { return fftest::max_rel_err(a, b); }
template <class T>
std::vector<double> wide(const std::vector<T>& x) {
  return std::vector<double>(x.begin(), x.end());
}
// lse with -inf rows (a query that sees no key of the block) required to stay -inf.
double lse_err(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> fa, fb;
  for (size_t i = 0; i < b.size(); ++i) {
    if (std::isinf(b[i])) {
      if (!(std::isinf(a[i]) && a[i] < 0)) return INFINITY;
      continue;
    }
    fa.push_back(a[i]), fb.push_back(b[i]);
  }
  return fb.empty() ? 0.0 : fftest::max_rel_err(fa, fb);
}

constexpr int kB = 4, kT = 150, kH = 4, kHkv = 2, kD = 16;

ff::AttentionShape whole_shape(const std::vector<int32_t>& docs, ff::AttentionTileCounts* tiles) {
  ff::AttentionShape s{kB, kT, kH, kHkv, kD, kH * kD, kHkv * kD};
  s.doc = docs.data();
  s.tiles = tiles;
  return s;
}

template <class T>
void check_whole(double tol) {
  const auto docs = docs_for(kB, kT);
  ff::AttentionTileCounts tiles;
  const ff::AttentionShape s = whole_shape(docs, &tiles);
  const AttentionBlock blk = ff::block_of_shape(s);
  const size_t nq = size_t(kB) * kT * kH * kD, nkv = size_t(kB) * kT * kHkv * kD;
  const auto q = randn(nq, 1), k = randn(nkv, 2), v = randn(nkv, 3), dout = randn(nq, 4);
  const Ref want = reference(blk, docs, docs, q, k, v, dout);
  const std::vector<T> qt(q.begin(), q.end()), kt(k.begin(), k.end()), vt(v.begin(), v.end()),
      dt(dout.begin(), dout.end());
  std::vector<T> out(nq, T(7)), lse(size_t(kB) * kH * kT, T(7)), dq(nq), dk(nkv), dv(nkv);
  ff::attention_forward(out.data(), lse.data(), qt.data(), kt.data(), vt.data(), s);
  ff::attention_backward(dq.data(), dk.data(), dv.data(), dt.data(), qt.data(), kt.data(), vt.data(), out.data(),
                         lse.data(), s);
  EXPECT_LT(rel(wide(out), want.out), tol);
  EXPECT_LT(lse_err(wide(lse), want.lse), tol);
  EXPECT_LT(rel(wide(dq), want.dq), tol);
  EXPECT_LT(rel(wide(dk), want.dk), tol);
  EXPECT_LT(rel(wide(dv), want.dv), tol);
  // Forward (per query head) and backward (per query head of each KV group) see the same tiles.
  const ff::AttentionTileCounts per = brute_force_tiles(blk, docs, docs);
  EXPECT_GT(per.skipped, 0u);
  EXPECT_EQ(tiles.visited, 2 * kH * per.visited);
  EXPECT_EQ(tiles.skipped, 2 * kH * per.skipped);
}

TEST(AttentionDocuments, Fp64WholeSequencesMatchMaskedSoftmax) { check_whole<double>(1e-12); }
TEST(AttentionDocuments, Fp32WholeSequencesMatchMaskedSoftmax) { check_whole<float>(2e-5); }

// A query block against an earlier key block with global positions, as context parallelism's
// ring and all-gather attention call it: ids compare across the blocks, a document crosses the edge.
TEST(AttentionDocuments, OffsetBlocksCompareIdsAcrossTheChunkEdge) {
  const auto all = docs_for(2, 2 * kT);
  for (AttentionMask mask : {AttentionMask::causal, AttentionMask::full}) {
    SCOPED_TRACE(mask == AttentionMask::full ? "full" : "causal");
    const int Tq = 90, Tk = 130, q_pos = 140, k_pos = mask == AttentionMask::full ? 0 : 100;
    std::vector<int32_t> qd, kd;
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < Tq; ++i) qd.push_back(all[size_t(b) * 2 * kT + q_pos + i]);
      for (int j = 0; j < Tk; ++j) kd.push_back(all[size_t(b) * 2 * kT + k_pos + j]);
    }
    AttentionBlock s = ff::contiguous_block(2, Tq, Tk, kH, kHkv, kD, kH * kD, kHkv * kD);
    s.q_pos = q_pos, s.k_pos = k_pos, s.mask = mask;
    s.q_doc = qd.data(), s.k_doc = kd.data(), s.q_doc_batch = Tq, s.k_doc_batch = Tk;
    ff::AttentionTileCounts tiles;
    s.tiles = &tiles;
    const size_t nq = size_t(2) * Tq * kH * kD, nkv = size_t(2) * Tk * kHkv * kD;
    const auto q = randn(nq, 5), k = randn(nkv, 6), v = randn(nkv, 7), dout = randn(nq, 8);
    const Ref want = reference(s, qd, kd, q, k, v, dout);
    const auto f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
    const auto qf = f(q), kf = f(k), vf = f(v), df = f(dout);
    std::vector<float> out(nq), lse(size_t(2) * kH * Tq), dq(nq), dk(nkv), dv(nkv);
    ff::attention_block_forward(out.data(), lse.data(), qf.data(), kf.data(), vf.data(), s);
    ff::attention_block_backward(dq.data(), dk.data(), dv.data(), df.data(), qf.data(), kf.data(), vf.data(),
                                 out.data(), lse.data(), s);
    EXPECT_LT(rel(wide(out), want.out), 2e-5);
    EXPECT_LT(lse_err(wide(lse), want.lse), 2e-5);
    EXPECT_LT(rel(wide(dq), want.dq), 2e-5);
    EXPECT_LT(rel(wide(dk), want.dk), 2e-5);
    EXPECT_LT(rel(wide(dv), want.dv), 2e-5);
    const ff::AttentionTileCounts per = brute_force_tiles(s, qd, kd);
    EXPECT_EQ(tiles.visited, 2 * kH * per.visited);
    EXPECT_EQ(tiles.skipped, 2 * kH * per.skipped);
  }
}

std::vector<double> rounded(std::vector<double> x) {
  for (auto& e : x) e = ff::bf16_to_f32(ff::f32_to_bf16(float(e)));
  return x;
}

// bf16 operands (values exactly representable, so the reference sees the kernel's inputs): the
// error is P's and dS's rounding, about 2^-8 relative (test_attention_bf16.cpp bounds it per element).
TEST(AttentionDocuments, Bf16WholeSequencesMatchMaskedSoftmax) {
  const auto docs = docs_for(kB, kT);
  ff::AttentionTileCounts tiles;
  const ff::AttentionShape s = whole_shape(docs, &tiles);
  const size_t nq = size_t(kB) * kT * kH * kD, nkv = size_t(kB) * kT * kHkv * kD;
  const auto q = rounded(randn(nq, 1)), k = rounded(randn(nkv, 2)), v = rounded(randn(nkv, 3)),
             dout = rounded(randn(nq, 4));
  const Ref want = reference(ff::block_of_shape(s), docs, docs, q, k, v, dout);
  const auto f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  const auto qf = f(q), kf = f(k), vf = f(v), df = f(dout);
  std::vector<float> out(nq), lse(size_t(kB) * kH * kT), dq(nq), dk(nkv), dv(nkv);
  ff::attention_forward_bf16(ff::TypedPtr(out.data()), lse.data(), ff::ConstTypedPtr(qf.data()),
                             ff::ConstTypedPtr(kf.data()), ff::ConstTypedPtr(vf.data()), s);
  ff::attention_backward_bf16(dq.data(), dk.data(), dv.data(), ff::ConstTypedPtr(df.data()),
                              ff::ConstTypedPtr(qf.data()), ff::ConstTypedPtr(kf.data()),
                              ff::ConstTypedPtr(vf.data()), ff::ConstTypedPtr(out.data()), lse.data(), s);
  EXPECT_LT(rel(wide(out), want.out), 1e-2);
  EXPECT_LT(lse_err(wide(lse), want.lse), 1e-3);
  EXPECT_LT(rel(wide(dq), want.dq), 2e-2);
  EXPECT_LT(rel(wide(dk), want.dk), 2e-2);
  EXPECT_LT(rel(wide(dv), want.dv), 1e-2);
  const ff::AttentionTileCounts per = brute_force_tiles(ff::block_of_shape(s), docs, docs);
  EXPECT_EQ(tiles.visited, 2 * kH * per.visited);
  EXPECT_EQ(tiles.skipped, 2 * kH * per.skipped);
  // A masked row attends to its own document only: without the ids the result differs.
  std::vector<float> plain(nq);
  ff::AttentionShape causal = s;
  causal.doc = nullptr;
  ff::attention_forward_bf16(ff::TypedPtr(plain.data()), lse.data(), ff::ConstTypedPtr(qf.data()),
                             ff::ConstTypedPtr(kf.data()), ff::ConstTypedPtr(vf.data()), causal);
  EXPECT_GT(rel(wide(plain), want.out), 0.05);
}

// One document per row is the causal attention: the bf16 kernel's bits do not change (its mask
// columns start at 0), and the fp32 block path agrees with the tiled causal kernel to rounding.
TEST(AttentionDocuments, OneDocumentPerRowIsCausal) {
  const std::vector<int32_t> docs(size_t(kB) * kT, 3);
  const size_t nq = size_t(kB) * kT * kH * kD, nkv = size_t(kB) * kT * kHkv * kD;
  const auto q = fftest::to_float(randn(nq, 1)), k = fftest::to_float(randn(nkv, 2)),
             v = fftest::to_float(randn(nkv, 3));
  ff::AttentionShape causal{kB, kT, kH, kHkv, kD, kH * kD, kHkv * kD}, masked = causal;
  masked.doc = docs.data();
  std::vector<float> a(nq), b(nq), la(size_t(kB) * kH * kT), lb(la.size());
  ff::attention_forward_bf16(ff::TypedPtr(a.data()), la.data(), ff::ConstTypedPtr(q.data()),
                             ff::ConstTypedPtr(k.data()), ff::ConstTypedPtr(v.data()), causal);
  ff::attention_forward_bf16(ff::TypedPtr(b.data()), lb.data(), ff::ConstTypedPtr(q.data()),
                             ff::ConstTypedPtr(k.data()), ff::ConstTypedPtr(v.data()), masked);
  EXPECT_EQ(a, b);
  EXPECT_EQ(la, lb);
  ff::attention_forward(a.data(), la.data(), q.data(), k.data(), v.data(), causal);
  ff::attention_forward(b.data(), lb.data(), q.data(), k.data(), v.data(), masked);
  EXPECT_LT(fftest::max_rel_err(b, wide(a)), 1e-5);
}

}  // namespace
