#include "calibrate/thread_scaling_run.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
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

constexpr double kTimingSeconds = 0.05;
constexpr WorkKind kWorkKinds[] = {WorkKind::gemm, WorkKind::attention, WorkKind::elementwise, WorkKind::optimizer};
constexpr int kTimingsPerCount = 3;


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

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

// The start is read before any group may begin, and each group reads its own end. A separate
// timing thread once read both around a barrier: with the groups filling the cores it got a core
// back only after they had worked, so some rounds "took" 0.01 ms, and the medians made 2 threads
// look worth 0.07 of two cores.
double concurrent_seconds(int groups, int threads, const MakeWork& make, int calls) {
  std::mutex lock;
  std::condition_variable changed;
  int ready = 0;
  bool go = false;
  std::vector<clock_type::time_point> ends(static_cast<size_t>(groups));
  std::vector<std::thread> pool;
  for (int g = 0; g < groups; ++g)
    pool.emplace_back([&, g] {
      omp_set_num_threads(threads);  // this thread's team: a rank of `threads`
      const Work work = make();
      work();
      {
        std::unique_lock<std::mutex> hold(lock);
        ++ready;
        changed.notify_all();
        changed.wait(hold, [&] { return go; });
      }
      for (int c = 0; c < calls; ++c) work();
      ends[size_t(g)] = clock_type::now();
    });
  clock_type::time_point start;
  {
    std::unique_lock<std::mutex> hold(lock);
    changed.wait(hold, [&] { return ready == groups; });
    start = clock_type::now();
    go = true;
  }
  changed.notify_all();
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) - start).count();
}

std::vector<int> scaling_thread_counts(int cores) {
  std::vector<int> out;
  for (int t = 1; t < cores; t *= 2)
    if (cores % t == 0) out.push_back(t);
  out.push_back(std::max(1, cores));
  return out;
}

ThreadScaling thread_scaling_shape(int cores) {
  ThreadScaling s;
  for (WorkKind kind : kWorkKinds) {
    for (int t : scaling_thread_counts(cores)) s.curve(kind).points.emplace_back(t, 0);
    for (int t : scaling_thread_counts(2 * std::max(1, cores))) s.curve(kind, true).points.emplace_back(t, 0);
  }
  return s;
}

void for_each_efficiency(ThreadScaling& s, const std::function<void(double&)>& visit) {
  for (bool twice : {false, true})
    for (WorkKind kind : kWorkKinds)
      for (auto& p : s.curve(kind, twice).points) visit(p.second);
}

ThreadScaling measure_thread_scaling(int cores, int rates_threads, int sweeps) {
  cores = std::max(1, cores);
  ThreadScaling s = thread_scaling_shape(cores);
  s.rates_threads = rates_threads;
  const std::pair<WorkKind, MakeWork> kinds[] = {{WorkKind::gemm, linear_work},
                                                 {WorkKind::attention, attention_work},
                                                 {WorkKind::elementwise, elementwise_work},
                                                 {WorkKind::optimizer, optimizer_work}};
  for (const auto& [kind, make] : kinds) {
    // Every point of both curves: T threads per group, as many groups as fill the cores once
    // (or twice over); the first is one-thread groups filling the cores once, the baseline.
    struct Point {
      RateCurve* curve;
      size_t index;
      int threads, groups;
    };
    std::vector<Point> points;
    for (bool twice : {false, true}) {
      RateCurve& c = s.curve(kind, twice);
      for (size_t i = 0; i < c.points.size(); ++i) {
        const int T = int(c.points[i].first);
        points.push_back({&c, i, T, std::max(1, (twice ? 2 : 1) * cores / T)});
      }
    }
    // Calls per timing: enough for about kTimingSeconds of one thread's work.
    const double one_call = concurrent_seconds(1, 1, make, 1);
    const int calls = int(std::clamp(std::ceil(kTimingSeconds / std::max(one_call, 1e-6)), 1.0, 1e4));
    std::vector<std::vector<double>> by_sweep;
    for (int sweep = 0; sweep < std::max(1, sweeps); ++sweep) {
      // The points alternate within the sweep, so a slow moment falls on every point alike.
      std::vector<std::vector<double>> seconds(points.size());
      for (int timing = 0; timing < kTimingsPerCount; ++timing)
        for (size_t i = 0; i < points.size(); ++i)
          seconds[i].push_back(concurrent_seconds(points[i].groups, points[i].threads, make, calls));
      // The node's throughput (groups x calls per second) over the baseline's: at T threads
      // filling the cores once, one group's time at one thread over T times its time at T.
      std::vector<double> eff;
      const double base = median_of(seconds[0]) / points[0].groups;
      for (size_t i = 0; i < points.size(); ++i) eff.push_back(base * points[i].groups / median_of(seconds[i]));
      by_sweep.push_back(std::move(eff));
    }
    const std::vector<double> eff = median_by_position(by_sweep);
    for (size_t i = 0; i < points.size(); ++i) points[i].curve->points[points[i].index].second = std::max(1e-3, eff[i]);
  }
  return s;
}

}  // namespace ff
