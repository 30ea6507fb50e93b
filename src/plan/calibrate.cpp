#include "plan/calibrate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "core/memory.h"
#include "kernels/gemm.h"
#include "plan/hardware_peak.h"
#include "plan/memory_fit.h"

namespace ff {

namespace {

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

double time_gemm(GemmClass& g) {
  TrackedBuffer<float> a(size_t(g.M) * g.K, MemCategory::workspace), b(size_t(g.K) * g.N, MemCategory::workspace),
      c(size_t(g.M) * g.N, MemCategory::workspace);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) * 0.5f - 1.0f;
  double best = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = clock_type::now();
    gemm(false, false, g.M, g.N, g.K, 1.0f, a.data(), g.K, b.data(), g.N, 0.0f, c.data(), g.N);
    if (rep > 0) best = std::min(best, since(t0));  // the first pays for page faults
  }
  return g.flops = 2.0 * g.M * g.N * double(g.K) / best;
}

double triad_bandwidth() {
  const size_t n = size_t(8) << 20;  // 32 MiB per array: well beyond the caches
  TrackedBuffer<float> a(n, MemCategory::workspace), b(n, MemCategory::workspace), c(n, MemCategory::workspace);
  for (size_t i = 0; i < n; ++i) b[i] = 1.0f, c[i] = 2.0f;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = clock_type::now();
    float* pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) pa[i] = pb[i] + 0.5f * pc[i];
    if (rep > 0) best = std::min(best, since(t0));
  }
  return 3.0 * n * sizeof(float) / best;
}

// Best of several timings of one collective of `floats` per rank (every rank starts together).
template <class F>
double time_op(const Comm& world, F&& op) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    world.barrier();
    const auto t0 = clock_type::now();
    op();
    double t = since(t0);
    world.all_reduce(&t, 1, ReduceOp::max);  // the collective ends when its slowest rank does
    if (rep > 0) best = std::min(best, t);
  }
  return best;
}

LinkFit fit(const Comm& world, const std::string& name, double bus_factor, size_t small, size_t large) {
  const int n = world.size();
  std::vector<float> in(large * size_t(n)), out(large * size_t(n));
  auto run = [&](size_t count) {
    if (name == "all_reduce") return time_op(world, [&] { world.all_reduce(in.data(), count); });
    if (name == "all_gather") return time_op(world, [&] { world.all_gather(in.data(), out.data(), count * n); });
    if (name == "reduce_scatter") return time_op(world, [&] { world.reduce_scatter(in.data(), out.data(), count * n); });
    if (name == "all_to_all") return time_op(world, [&] { world.all_to_all(in.data(), out.data(), count); });
    // p2p: rank 0 and 1 ping-pong, half the round trip
    return time_op(world, [&] {
             if (world.rank() == 0) world.send(in.data(), count, 1), world.recv(out.data(), count, 1);
             if (world.rank() == 1) world.recv(out.data(), count, 0), world.send(in.data(), count, 0);
           }) / 2;
  };
  const double ts = run(small), tl = run(large);
  LinkFit f;
  f.op = name;
  const double bytes_s = double(small) * 4, bytes_l = double(large) * 4;
  f.beta = std::max(0.0, (tl - ts) / (bytes_l - bytes_s));
  f.alpha = std::max(0.0, ts - f.beta * bytes_s);
  // nccl-tests: algbw = S / t with S the per-rank payload (all-reduce) or the total (RS, AG).
  const double S = name == "all_gather" || name == "reduce_scatter" ? bytes_l * n : bytes_l;
  f.busbw = S / tl * bus_factor;
  return f;
}

}  // namespace

Calibration calibrate(const Comm& world, int threads, int ranks_per_machine) {
  Calibration c;
  omp_set_num_threads(threads);
  c.gemm = {{"square 1024", 1024, 1024, 1024}, {"few rows 256x1024x1024", 256, 1024, 1024},
            {"wide 1024x4096x512", 1024, 4096, 512}};
  for (GemmClass& g : c.gemm) time_gemm(g);
  c.memory_bandwidth = triad_bandwidth();
  const int n = world.size();
  if (n > 1) {
    const double ar = 2.0 * (n - 1) / n, other = double(n - 1) / n;
    c.links.push_back(fit(world, "all_reduce", ar, 256, size_t(1) << 18));
    c.links.push_back(fit(world, "all_gather", other, 256, size_t(1) << 18));
    c.links.push_back(fit(world, "reduce_scatter", other, 256, size_t(1) << 18));
    c.links.push_back(fit(world, "all_to_all", other, 256, size_t(1) << 18));
    c.links.push_back(fit(world, "p2p", 1.0, 256, size_t(1) << 18));
  }
  ClusterSpec& cl = c.cluster = this_machine(ranks_per_machine);
  cl.name = "calibrated: " + cl.name;
  cl.devices_per_node = ranks_per_machine;
  double best_gemm = 0;
  for (const GemmClass& g : c.gemm) best_gemm = std::max(best_gemm, g.flops);
  cl.gemm_efficiency = std::min(1.0, best_gemm / cl.peak_flops);
  if (!c.links.empty()) {
    const LinkFit& ar = c.links.front();
    cl.intra_bandwidth = cl.inter_bandwidth = ar.busbw;
    cl.intra_latency = cl.inter_latency = ar.alpha / (2.0 * (n - 1));  // per ring step
  }
  return c;
}

std::string Calibration::toml() const {
  std::string t = cluster_to_toml(cluster) + "\n[measured]\n";
  for (const GemmClass& g : gemm)
    t += fmt::format("gemm_{}x{}x{} = {:.6g}  # FLOP/s, {}\n", g.M, g.N, g.K, g.flops, g.name);
  t += fmt::format("memory_bandwidth = {:.6g}  # bytes/s, triad\n", memory_bandwidth);
  for (const LinkFit& l : links)
    t += fmt::format("{}_alpha = {:.6g}  # s\n{}_beta = {:.6g}  # s per byte\n{}_busbw = {:.6g}  # bytes/s\n", l.op,
                     l.alpha, l.op, l.beta, l.op, l.busbw);
  return t;
}

}  // namespace ff
