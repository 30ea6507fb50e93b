#include "calibrate/thread_scaling_run.h"

#include <omp.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "calibrate/calibration.h"
#include "kernels/adamw.h"
#include "kernels/attention_precision.h"
#include "kernels/rmsnorm.h"
#include "kernels/swiglu.h"
#include "model/linear.h"

namespace ff {

namespace {

using clock_type = std::chrono::steady_clock;

// The work of one rank-sized group, built inside its own thread (so its buffers are first
// touched there) and run once per timing.
using Work = std::function<void()>;
using MakeWork = std::function<Work()>;

std::vector<float> filled(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (float(i % 11) - 5.0f);
  return v;
}

// Shapes of a `bench`-sized block: 2048 tokens of width 384, MLP width 1024.
constexpr int kScaleTokens = 2048, kScaleWidth = 384, kScaleFfn = 1024;

// A linear layer's forward, dgrad and wgrad (model/linear.h), fp32.
Work linear_work() {
  auto buf = std::make_shared<std::vector<float>>(filled(size_t(3) * kScaleTokens * kScaleWidth + 2 * size_t(kScaleWidth) * kScaleWidth, 0.01f));
  return [buf] {
    const GemmContext fp32;
    float *x = buf->data(), *y = x + size_t(kScaleTokens) * kScaleWidth, *dx = y + size_t(kScaleTokens) * kScaleWidth;
    float *W = dx + size_t(kScaleTokens) * kScaleWidth, *dW = W + size_t(kScaleWidth) * kScaleWidth;
    matmul_xwt(fp32, y, x, W, kScaleTokens, kScaleWidth, kScaleWidth);
    matmul_dyw(fp32, dx, y, W, kScaleTokens, kScaleWidth, kScaleWidth);
    accumulate_dw(fp32, dW, y, x, kScaleTokens, kScaleWidth, kScaleWidth);
  };
}

// Causal attention forward + backward: 2 sequences of 256 tokens, 6 heads of 64.
Work attention_work() {
  const int B = 2, T = 256, H = 6, D = 64, Q = 3 * H * D;
  const size_t rows = size_t(B) * T, qkv = rows * Q, on = rows * H * D;
  auto buf = std::make_shared<std::vector<float>>(filled(2 * qkv + 2 * on + size_t(B) * H * T, 0.01f));
  return [buf, qkv, on, B, T, H, D, Q] {
    const GemmContext fp32;
    float *x = buf->data(), *dx = x + qkv, *o = dx + qkv, *dout = o + on, *lse = dout + on;
    const AttentionShape s{B, T, H, H, D, Q, Q};
    attention_forward_run_precision(fp32, o, lse, x, x + H * D, x + 2 * H * D, s);
    attention_backward_run_precision(fp32, dx, dx + H * D, dx + 2 * H * D, dout, x, x + H * D, x + 2 * H * D, o, lse, s);
  };
}

// The block's element-wise kernels: an RMSNorm and SwiGLU, forward and backward.
Work elementwise_work() {
  const size_t e = size_t(kScaleTokens) * kScaleWidth, f = size_t(kScaleTokens) * kScaleFfn;
  auto buf = std::make_shared<std::vector<float>>(filled(4 * e + kScaleTokens + 2 * kScaleWidth + 6 * f, 0.1f));
  return [buf, e, f] {
    float *x = buf->data(), *y = x + e, *dy = y + e, *dx = dy + e, *rstd = dx + e, *w = rstd + kScaleTokens, *dw = w + kScaleWidth;
    float *gu = dw + kScaleWidth, *h = gu + 2 * f, *dh = h + f, *dgu = dh + f;
    rmsnorm_forward(y, rstd, x, w, kScaleTokens, kScaleWidth, 1e-5f);
    rmsnorm_backward(dx, dw, dy, x, w, rstd, kScaleTokens, kScaleWidth);
    swiglu_forward(h, gu, kScaleTokens, kScaleFfn);
    swiglu_backward(dgu, dh, gu, kScaleTokens, kScaleFfn);
  };
}

// The optimizer's step over 2M parameters: zero a gradient, its norm, the clip, AdamW.
Work optimizer_work() {
  const size_t n = size_t(1) << 21;
  auto buf = std::make_shared<std::vector<float>>(filled(5 * n, 1e-4f));
  auto step = std::make_shared<int>(1);
  return [buf, step, n] {
    float *p = buf->data(), *g = p + n, *m = g + n, *v = m + n, *z = v + n;
    std::memset(z, 0, n * sizeof(float));
    volatile double norm = l2_norm(g, n);
    (void)norm;
    scale_inplace(g, n, 1.0f);
    adamw_update(p, g, m, v, n, AdamWHyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, (*step)++}, true);
  };
}

// Median wall seconds of `groups` groups of `threads` OpenMP threads each running its work at
// once (a timing ends when the last group does); the first timing (page faults) is dropped.
double concurrent_seconds(int groups, int threads, const MakeWork& make) {
  const int reps = 6;
  std::barrier sync(groups + 1);
  std::vector<std::thread> pool;
  for (int g = 0; g < groups; ++g)
    pool.emplace_back([&] {
      omp_set_num_threads(threads);  // this thread's team: a rank of `threads`
      const Work work = make();
      for (int r = 0; r < reps; ++r) {
        sync.arrive_and_wait();
        work();
        sync.arrive_and_wait();
      }
    });
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    sync.arrive_and_wait();
    const auto t0 = clock_type::now();
    sync.arrive_and_wait();
    if (r > 0) t.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  for (std::thread& th : pool) th.join();
  std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

std::vector<int> scaling_thread_counts(int cores) {
  std::vector<int> out;
  for (int t = 1; t < cores; t *= 2)
    if (cores % t == 0) out.push_back(t);
  out.push_back(std::max(1, cores));
  return out;
}

ThreadScaling measure_thread_scaling(int cores, int rates_threads, int sweeps) {
  ThreadScaling s;
  s.rates_threads = rates_threads;
  const std::vector<int> counts = scaling_thread_counts(cores);
  const std::pair<WorkKind, MakeWork> kinds[] = {{WorkKind::gemm, linear_work},
                                                 {WorkKind::attention, attention_work},
                                                 {WorkKind::elementwise, elementwise_work},
                                                 {WorkKind::optimizer, optimizer_work}};
  for (const auto& [kind, make] : kinds) {
    // Per sweep, the efficiency at each count: one group's time at one thread over T times its
    // time at T threads (cores / T groups at once either way).
    std::vector<std::vector<double>> by_sweep;
    for (int sweep = 0; sweep < std::max(1, sweeps); ++sweep) {
      std::vector<double> eff;
      double one = 0;
      for (int T : counts) {
        const double t = concurrent_seconds(std::max(1, cores / T), T, make);
        if (T == 1) one = t;
        eff.push_back(one / (T * t));
      }
      by_sweep.push_back(std::move(eff));
    }
    const std::vector<double> eff = median_by_position(by_sweep);
    RateCurve& c = s.curve(kind);
    for (size_t i = 0; i < counts.size(); ++i) c.points.emplace_back(counts[i], std::max(1e-3, eff[i]));
  }
  return s;
}

}  // namespace ff
