#include "calibrate/kernel_rates.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "kernels/adamw.h"
#include "kernels/convert.h"
#include "kernels/cross_entropy.h"
#include "kernels/attention_block.h"
#include "kernels/attention_precision.h"
#include "kernels/gemm_precision.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace ff {

namespace {

using clock_type = std::chrono::steady_clock;

// Median seconds of run(copy) over rotating operand copies, each timing on operands flushed from
// the caches; every rank starts each timing together, the first (page faults, cold code) is dropped.
template <class F>
double median_seconds(const Comm* sync, CacheFlusher& flush, int copies, F&& run) {
  std::vector<double> t;
  for (int rep = 0; rep <= 3; ++rep) {
    flush();
    if (sync) sync->barrier();
    const auto t0 = clock_type::now();
    run(rep % copies);
    if (rep > 0) t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// Copies of a `floats`-sized operand set that fill about 8 MiB (small sets: more timings).
int copies_for(size_t floats) { return int(std::clamp<size_t>((size_t(8) << 20) / (4 * floats), 1, 8)); }

void fill(TrackedBuffer<float>& b, float scale) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = scale * (float(i % 11) - 5.0f);
}

constexpr int kRows[] = {256, 1024, 4096};  // tokens of a micro-batch
constexpr int kC = 256, kFfn = 512, kHeadWidth = 256, kT = 128, kV = 4096;
constexpr int kCeRows[] = {64, 256, 1024};                                  // x kV logits
constexpr size_t kParams[] = {size_t(1) << 18, size_t(1) << 20, size_t(1) << 22};  // optimizer, weight copy
constexpr int kAttnT[] = {64, 128, 256, 512}, kAttnD[] = {32, 64, 128};
constexpr int kChunkT[] = {16, 32, 64, 128};  // context parallelism's chunks: T / (2 cp)

// Zeroing one gradient buffer, its norm, a clip (scale) and AdamW over `n` parameters, as the
// step after the backward does them.
double optimizer_seconds(const Comm* sync, CacheFlusher& flush, size_t n) {
  TrackedBuffer<float> p(n, MemCategory::workspace), g(n, MemCategory::workspace), m(n, MemCategory::workspace),
      v(n, MemCategory::workspace), z(n, MemCategory::workspace);
  fill(p, 0.01f), fill(g, 1e-3f), fill(m, 1e-4f), fill(v, 1e-7f);
  AdamWHyper h{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1};
  volatile double sink = 0;
  return median_seconds(sync, flush, 1, [&](int) {
    std::memset(z.data(), 0, n * sizeof(float));
    sink = sink + l2_norm(g.data(), n);
    scale_inplace(g.data(), n, 1.0f);
    adamw_update(p.data(), g.data(), m.data(), v.data(), n, h, true);
    ++h.step;
  });
}

double rmsnorm_seconds(const Comm* sync, CacheFlusher& flush, int N) {
  const size_t e = size_t(N) * kC, set = 4 * e + N;
  const int copies = copies_for(set);
  TrackedBuffer<float> buf(set * copies, MemCategory::workspace), w(kC, MemCategory::workspace),
      dw(kC, MemCategory::workspace);
  fill(buf, 0.1f), fill(w, 0.2f);
  return median_seconds(sync, flush, copies, [&](int k) {
    float *x = buf.data() + size_t(k) * set, *y = x + e, *dy = y + e, *dx = dy + e, *rstd = dx + e;
    rmsnorm_forward(y, rstd, x, w.data(), N, kC, 1e-5f);
    rmsnorm_backward(dx, dw.data(), dy, x, w.data(), rstd, N, kC);
  });
}

double rope_seconds(const Comm* sync, CacheFlusher& flush, int N) {
  const int D = 32, heads = kHeadWidth / D;
  const size_t e = size_t(N) * kHeadWidth;
  const int copies = copies_for(e);
  TrackedBuffer<float> buf(e * copies, MemCategory::workspace), cos(size_t(kT) * D, MemCategory::workspace),
      sin(size_t(kT) * D, MemCategory::workspace);
  fill(buf, 0.1f);
  rope_tables(cos.data(), sin.data(), kT, D, 10000.0f);
  return median_seconds(sync, flush, copies, [&](int k) {
    float* x = buf.data() + size_t(k) * e;
    rope_forward(x, cos.data(), sin.data(), N / kT, kT, heads, D, kHeadWidth);
    rope_backward(x, cos.data(), sin.data(), N / kT, kT, heads, D, kHeadWidth);
  });
}

double swiglu_seconds(const Comm* sync, CacheFlusher& flush, int N) {
  const size_t e = size_t(N) * kFfn, set = 6 * e;  // gate_up (2F), h (F), dh (F), d_gate_up (2F)
  const int copies = copies_for(set);
  TrackedBuffer<float> buf(set * copies, MemCategory::workspace);
  fill(buf, 0.1f);
  return median_seconds(sync, flush, copies, [&](int k) {
    float *gu = buf.data() + size_t(k) * set, *h = gu + 2 * e, *dh = h + e, *dgu = dh + e;
    swiglu_forward(h, gu, N, kFfn);
    swiglu_backward(dgu, dh, gu, N, kFfn);
  });
}

// The loss's forward and backward in place over (N, V) logits (the backward overwrites them
// with their gradient, so each timing gets fresh ones from a copy).
double cross_entropy_seconds(const Comm* sync, CacheFlusher& flush, int N) {
  const size_t e = size_t(N) * kV;
  const int copies = copies_for(e);
  TrackedBuffer<float> buf(e * copies, MemCategory::workspace), losses(size_t(N), MemCategory::workspace);
  std::vector<int32_t> targets(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) targets[size_t(i)] = (i * 37) % kV;
  fill(buf, 0.3f);
  return median_seconds(sync, flush, copies, [&](int k) {
    cross_entropy_forward_backward(buf.data() + size_t(k) * e, losses.data(), targets.data(), N, kV, 1.0f / N);
  });
}

double weight_copy_seconds(const Comm* sync, CacheFlusher& flush, size_t n) {
  TrackedBuffer<float> w(n, MemCategory::workspace);
  TypedBuffer copy(n, DType::bf16, MemCategory::workspace);
  fill(w, 0.01f);
  return median_seconds(sync, flush, 1, [&](int) { convert_from_f32(copy.ptr(), w.data(), n); });
}

// Causal attention forward + backward as a block runs it: B sequences of T tokens, q, k and v
// side by side in one (B T, (H + 2 Hkv) D) projection (and their gradients in another), 4 query
// heads sharing 2 key/value heads (grouped-query, as LLaMA models), head width D; with the kernels
// of `inputs` (bf16: the bf16 tile products a `precision = bf16` step runs). Seconds per B H T^2 D
// of the forward alone and of forward + backward: selective recompute repeats only the forward.
struct AttentionTimes {
  double forward, both;
};
AttentionTimes attention_seconds(const Comm* sync, CacheFlusher& flush, int T, int D, DType inputs) {
  const GemmContext gemm{.input_dtype = inputs};
  const int B = 2, H = 4, Hkv = 2, Q = (H + 2 * Hkv) * D;
  const size_t rows = size_t(B) * T, qkv = rows * Q, on = rows * H * D;
  TrackedBuffer<float> buf(2 * qkv + 2 * on + size_t(B) * H * T, MemCategory::workspace);
  fill(buf, 0.01f);
  float *x = buf.data(), *dx = x + qkv, *o = dx + qkv, *dout = o + on, *lse = dout + on;
  const AttentionShape s{B, T, H, Hkv, D, Q, Q};
  const int kv = H * D, vv = (H + Hkv) * D;  // k and v offsets in a row
  std::vector<double> fwd, both;
  for (int rep = 0; rep <= 3; ++rep) {
    flush();
    if (sync) sync->barrier();
    const auto t0 = clock_type::now();
    attention_forward_run_precision(gemm, o, lse, x, x + kv, x + vv, s);
    const auto t1 = clock_type::now();
    attention_backward_run_precision(gemm, dx, dx + kv, dx + vv, dout, x, x + kv, x + vv, o, lse, s);
    if (rep == 0) continue;  // page faults, cold code
    fwd.push_back(std::chrono::duration<double>(t1 - t0).count());
    both.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  auto median = [](std::vector<double>& t) {
    std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
    return t[t.size() / 2];
  };
  const double units = double(B) * H * T * double(T) * D;
  return {median(fwd) / units, median(both) / units};
}

// One block of context parallelism's block form (parallel/context/context_attention.cpp): B
// sequences' chunk of c queries against an earlier chunk of c keys (`diagonal`: against itself,
// under the causal mask), its partial output merged into the chunk's rows by log-sum-exp, then its
// backward against the merged statistics; the shapes as attention_seconds. Seconds per B H c^2 D.
double cp_block_seconds(const Comm* sync, CacheFlusher& flush, int c, int D, DType inputs, bool diagonal) {
  const GemmContext gemm{.input_dtype = inputs};
  const int B = 2, H = 4, Hkv = 2, Q = (H + 2 * Hkv) * D;
  const size_t rows = size_t(B) * c, qkv = rows * Q, on = rows * H * D, nl = size_t(B) * H * c;
  TrackedBuffer<float> buf(2 * qkv + 3 * on + 2 * nl, MemCategory::workspace);
  fill(buf, 0.01f);
  float *x = buf.data(), *dx = x + qkv, *acc = dx + qkv, *part = acc + on, *dout = part + on, *lse = dout + on,
        *part_lse = lse + nl;
  AttentionBlock blk = contiguous_block(B, c, c, H, Hkv, D, Q, Q);
  blk.q_pos = c, blk.k_pos = diagonal ? c : 0;  // the keys' chunk itself, or wholly before
  blk.mask = diagonal ? AttentionMask::causal : AttentionMask::full;
  const MergeLayout m{B, c, H, D, blk.o_batch, blk.o_row, blk.l_batch, blk.l_head};
  const int kv = H * D, vv = (H + Hkv) * D;
  for (size_t i = 0; i < nl; ++i) lse[i] = 0.0f;
  return median_seconds(sync, flush, 1, [&](int) {
    attention_block_forward_run_precision(gemm, part, part_lse, x, x + kv, x + vv, blk);
    attention_merge(acc, lse, m, part, part_lse, m);
    attention_block_backward_run_precision(gemm, dx, dx + kv, dx + vv, dout, x, x + kv, x + vv, acc, lse, blk);
  }) / (double(B) * H * c * double(c) * D);
}

}  // namespace

std::vector<GemmTable*> cp_block_tables(EngineRates& r) {
  return {&r.cp_block_dim, &r.cp_block_dim_bf16, &r.cp_diag_dim, &r.cp_diag_dim_bf16};
}

CacheFlusher::CacheFlusher() : junk_(size_t(16) << 20, MemCategory::workspace) {}

void CacheFlusher::operator()() {
  value_ += 1;
  float* p = junk_.data();
  const size_t n = junk_.size();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) p[i] = value_;
}

std::vector<GemmTable*> attention_tables(EngineRates& r) {
  return {&r.attention_dim, &r.attention_fwd_dim, &r.attention_dim_bf16, &r.attention_fwd_dim_bf16};
}

void shape_kernel_rates(EngineRates& r) {
  r.optimizer.points.clear(), r.weight_copy.points.clear(), r.rmsnorm.points.clear(), r.rope.points.clear();
  r.swiglu.points.clear(), r.cross_entropy.points.clear(), r.attention_dim = GemmTable{};
  for (size_t n : kParams) r.optimizer.points.emplace_back(double(n), 0), r.weight_copy.points.emplace_back(double(n), 0);
  for (int N : kRows) {
    r.rmsnorm.points.emplace_back(double(N) * kC, 0);
    r.rope.points.emplace_back(double(N) * kHeadWidth, 0);
    r.swiglu.points.emplace_back(double(N) * kFfn, 0);
  }
  for (int N : kCeRows) r.cross_entropy.points.emplace_back(double(N) * kV, 0);
  for (GemmTable* t : attention_tables(r))
    for (int T : kAttnT)
      for (int D : kAttnD) t->add(T, D, 0);
  for (GemmTable* t : cp_block_tables(r)) {
    *t = GemmTable{};
    for (int c : kChunkT)
      for (int D : kAttnD) t->add(c, D, 0);
  }
}

void measure_kernel_rates(const Comm* sync, int threads, EngineRates& r, CacheFlusher& flush) {
  shape_kernel_rates(r);
  auto per_core = [&](RateCurve& c, auto&& seconds) {  // seconds(x) for each point's x elements
    for (auto& [x, y] : c.points) y = seconds(x) / x * threads;
  };
  per_core(r.optimizer, [&](double n) { return optimizer_seconds(sync, flush, size_t(n)); });
  per_core(r.weight_copy, [&](double n) { return weight_copy_seconds(sync, flush, size_t(n)); });
  per_core(r.rmsnorm, [&](double e) { return rmsnorm_seconds(sync, flush, int(e / kC)); });
  per_core(r.rope, [&](double e) { return rope_seconds(sync, flush, int(e / kHeadWidth)); });
  per_core(r.swiglu, [&](double e) { return swiglu_seconds(sync, flush, int(e / kFfn)); });
  per_core(r.cross_entropy, [&](double e) { return cross_entropy_seconds(sync, flush, int(e / kV)); });
  for (DType inputs : {DType::f32, DType::bf16}) {
    const bool bf16 = inputs == DType::bf16;
    GemmTable &both = bf16 ? r.attention_dim_bf16 : r.attention_dim, &fwd = bf16 ? r.attention_fwd_dim_bf16 : r.attention_fwd_dim;
    for (size_t i = 0; i < both.by_rows.size(); ++i)
      for (size_t j = 0; j < both.by_rows[i].second.points.size(); ++j) {
        const AttentionTimes t =
            attention_seconds(sync, flush, int(both.by_rows[i].first), int(both.by_rows[i].second.points[j].first), inputs);
        both.by_rows[i].second.points[j].second = t.both * threads;
        fwd.by_rows[i].second.points[j].second = t.forward * threads;
      }
    for (bool diagonal : {false, true}) {
      GemmTable& t = *cp_block_tables(r)[size_t(2 * diagonal + bf16)];
      for (auto& [c, curve] : t.by_rows)
        for (auto& [D, rate] : curve.points)
          rate = cp_block_seconds(sync, flush, int(c), int(D), inputs, diagonal) * threads;
    }
  }
}

}  // namespace ff
