#include "calibrate/calibration.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "calibrate/hardware_peak.h"
#include "calibrate/kernel_rates.h"
#include "calibrate/link_cpu.h"
#include "calibrate/shared_cores.h"
#include "calibrate/this_machine.h"
#include "calibrate/thread_scaling_run.h"
#include "calibrate/wall_clock.h"
#include "comm/nodes.h"
#include "core/memory.h"
#include "kernels/flash_attention.h"
#include "kernels/gemm_precision.h"
#include "model/linear.h"

namespace ff {

namespace {

using clock_type = std::chrono::steady_clock;

// The median of several timings, each on its own copy of the operands, so they arrive from
// beyond the core's L2 as a training step's weights and activations do.
double time_gemm(GemmClass& g, DType inputs = DType::f32) {
  const GemmContext gemm{.input_dtype = inputs};
  const size_t na = size_t(g.M) * g.K, nb = size_t(g.K) * g.N, nc = size_t(g.M) * g.N;
  const int copies = int(std::clamp<size_t>((size_t(8) << 20) / (4 * (na + nb + nc)), 1, 16));
  TrackedBuffer<float> a(na * copies, MemCategory::workspace), b(nb * copies, MemCategory::workspace),
      c(nc * copies, MemCategory::workspace);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) * 0.5f - 1.0f;
  std::vector<double> t;
  for (int rep = 0; rep <= std::max(copies, 5); ++rep) {
    const size_t k = size_t(rep % copies);
    const auto t0 = clock_type::now();
    gemm_run_precision(gemm, false, false, g.M, g.N, g.K, 1.0f, a.data() + k * na, g.K, b.data() + k * nb, g.N, 0.0f,
                       c.data() + k * nc, g.N);
    if (rep > 0) t.push_back(seconds_since(t0));  // the first pays for page faults
  }
  std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
  return g.flops = 2.0 * g.M * g.N * double(g.K) / t[t.size() / 2];
}

// A linear layer as training runs it (model/linear.h): forward y = x W^T, dgrad dx = dy W, wgrad
// dW += dy^T x, on (rows, width) activations and a (width, width) weight; FLOP/s over the three,
// median of timings on rotating operand copies flushed from the caches (as a step meets them),
// every rank on the same shape at once.
double time_linear(int rows, int width, DType inputs, const Comm* sync, CacheFlusher& flush) {
  const GemmContext gemm{.input_dtype = inputs};
  const size_t nx = size_t(rows) * width, nw = size_t(width) * width, set = 3 * nx + 2 * nw;
  const int copies = int(std::clamp<size_t>((size_t(8) << 20) / (4 * set), 1, 16));
  TrackedBuffer<float> buf(set * copies, MemCategory::workspace);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i % 7) * 0.05f - 0.15f;
  std::vector<double> t;
  for (int rep = 0; rep <= 3; ++rep) {
    float* x = buf.data() + size_t(rep % copies) * set;
    float *y = x + nx, *dx = y + nx, *W = dx + nx, *dW = W + nw;
    flush();  // the weights and activations from memory, as a step meets them
    if (sync) sync->barrier();  // every rank on the same shape at once
    const auto t0 = clock_type::now();
    matmul_xwt(gemm, y, x, W, rows, width, width);
    matmul_dyw(gemm, dx, y, W, rows, width, width);
    accumulate_dw(gemm, dW, y, x, rows, width, width);
    if (rep > 0) t.push_back(seconds_since(t0));  // the first pays for page faults
  }
  std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
  return 6.0 * rows * double(width) * width / t[t.size() / 2];
}

// Triad over three arrays of `n` floats (the working set is 12 n bytes).
double triad_bandwidth(size_t n) {
  TrackedBuffer<float> a(n, MemCategory::workspace), b(n, MemCategory::workspace), c(n, MemCategory::workspace);
  for (size_t i = 0; i < n; ++i) b[i] = 1.0f, c[i] = 2.0f;
  double best = 1e30;
  const int reps = int(std::clamp<size_t>((size_t(64) << 20) / n, 5, 200));
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = clock_type::now();
    float* pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) pa[i] = pb[i] + 0.5f * pc[i];
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  return 3.0 * n * sizeof(float) / best;
}

// Seconds per B H T^2 D of causal attention, forward + backward, at sequence length T (D 64).
double attention_seconds_per_unit(int T) {
  const int B = 1, H = 4, D = 64;
  const size_t qn = size_t(B) * T * H * D;
  TrackedBuffer<float> q(qn, MemCategory::workspace), k(qn, MemCategory::workspace), v(qn, MemCategory::workspace),
      o(qn, MemCategory::workspace), d(qn * 3, MemCategory::workspace), lse(size_t(B) * H * T, MemCategory::workspace);
  for (size_t i = 0; i < qn; ++i) q[i] = float(i % 13) * 0.01f, k[i] = float(i % 7) * 0.02f, v[i] = float(i % 5) * 0.1f;
  const AttentionShape s{B, T, H, H, D, H * D, H * D};
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {
    const auto t0 = clock_type::now();
    attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s);
    attention_backward(d.data(), d.data() + qn, d.data() + 2 * qn, o.data(), q.data(), k.data(), v.data(), o.data(),
                       lse.data(), s);
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  return best / (double(B) * H * T * double(T) * D);
}

// The cores this rank's threads get while every rank computes at once: CPU time over wall time
// of a busy loop (other work on the machine, or more ranks than cores, lowers it).
double busy_cpu_share(const Comm& world) {
  world.barrier();
  timespec c0{}, c1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  const auto t0 = clock_type::now();
#pragma omp parallel
  {
    volatile double x = 1;  // every thread of the rank spins
    while (seconds_since(t0) < 0.5)
      for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  const double cpu = double(c1.tv_sec - c0.tv_sec) + 1e-9 * double(c1.tv_nsec - c0.tv_nsec);
  return cpu / seconds_since(t0);  // cores' worth this rank's threads got
}

// Best of several timings of one collective of `floats` per rank (every rank starts together;
// nine, as a waiting rank that yields its core can lose a time slice to other work).
template <class F>
double time_op(const Comm& world, F&& op) {
  double best = 1e30;
  for (int rep = 0; rep < 9; ++rep) {
    world.barrier();
    const auto t0 = clock_type::now();
    op();
    double t = seconds_since(t0);
    world.all_reduce(&t, 1, ReduceOp::max);  // the collective ends when its slowest rank does
    if (rep > 0) best = std::min(best, t);
  }
  return best;
}

// A blocking collective as a step issues it: right after each rank's own compute (about 2 ms of
// GEMMs, no barrier in between), so the ranks arrive apart and the one that waits spins, yields or
// sleeps as the comm engine does mid-step. Median over iterations of (compute + all-reduce of one
// (1024, 256) activation), less the compute alone and the all-reduce's alpha-beta time.
double collective_overhead(const Comm& world, const LinkClass& link) {
  const int rows = 1024, width = 256;
  const GemmContext fp32;  // the default context: fp32 GEMMs
  TrackedBuffer<float> x(size_t(rows) * width, MemCategory::workspace), W(size_t(width) * width, MemCategory::workspace),
      y(size_t(rows) * width, MemCategory::workspace);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.05f - 0.15f;
  for (size_t i = 0; i < W.size(); ++i) W[i] = float(i % 5) * 0.01f - 0.02f;
  auto median_step = [&](bool collective) {
    world.barrier();
    std::vector<double> t;
    for (int it = 0; it < 21; ++it) {
      const auto t0 = clock_type::now();
      for (int g = 0; g < 4; ++g) matmul_xwt(fp32, y.data(), x.data(), W.data(), rows, width, width);  // overwrites y
      if (collective) world.all_reduce(y.data(), y.size());
      if (it > 0) t.push_back(seconds_since(t0));
    }
    std::nth_element(t.begin(), t.begin() + long(t.size() / 2), t.end());
    return t[t.size() / 2];
  };
  const double alone = median_step(false), with = median_step(true);
  double extra = with - alone - link.seconds(Coll::all_reduce, 4.0 * double(y.size()), world.size());
  world.all_reduce(&extra, 1, ReduceOp::max);  // one number for every rank
  return std::max(0.0, extra);
}

// `p2p_peer`: the rank that ping-pongs with rank 0 (rank 1 on one node; the first rank of another
// node for the across-node class).
LinkFit fit_link(const Comm& world, const std::string& name, double bus_factor, size_t small, size_t large,
                 int p2p_peer = 1) {
  const int n = world.size();
  std::vector<float> in(large * size_t(n)), out(large * size_t(n));
  auto run = [&](size_t count) {
    if (name == "all_reduce") return time_op(world, [&] { world.all_reduce(in.data(), count); });
    if (name == "all_gather") return time_op(world, [&] { world.all_gather(in.data(), out.data(), count * n); });
    if (name == "reduce_scatter") return time_op(world, [&] { world.reduce_scatter(in.data(), out.data(), count * n); });
    if (name == "all_to_all") return time_op(world, [&] { world.all_to_all(in.data(), out.data(), count); });
    // p2p: rank 0 and the peer ping-pong, half the round trip
    return time_op(world, [&] {
             if (world.rank() == 0) world.send(in.data(), count, p2p_peer), world.recv(out.data(), count, p2p_peer);
             if (world.rank() == p2p_peer) world.recv(out.data(), count, 0), world.send(in.data(), count, 0);
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

// The alpha-beta fit of every collective on `group` into `link`. The large size: 16 MiB per rank, as
// large as a step's gradient buckets (a segment each, up to millions of floats), so the slope
// includes the memory traffic beyond the caches they meet. Across nodes Comm runs a collective
// that large node first (comm/hierarchical.cpp); the fits are of the flat algorithm at every size
// (node first off while they run), and the planner composes the node-first forms from them and
// the same-node class (plan/cost_rates.h, NodeFirstForm). Fitting across a size where the
// algorithm changes had made the link look 1.7x faster for all-reduce than for the others.
std::vector<LinkFit> fit_link_class(const Comm& group, LinkClass& link, int p2p_peer) {
  const int n = group.size();
  const double ar = 2.0 * (n - 1) / n, other = double(n - 1) / n;
  const size_t large = size_t(1) << 22;
  const CommOptions kept = group.options();
  CommOptions flat_only = kept;
  flat_only.hierarchical_min_bytes = flat_only.hierarchical_reduce_scatter_min_bytes =
      flat_only.hierarchical_all_gather_min_bytes = SIZE_MAX;
  group.set_options(flat_only);
  std::vector<LinkFit> fits;
  fits.push_back(fit_link(group, "all_reduce", ar, 256, large));
  fits.push_back(fit_link(group, "all_gather", other, 256, large));
  fits.push_back(fit_link(group, "reduce_scatter", other, 256, large));
  fits.push_back(fit_link(group, "all_to_all", other, 256, large));
  fits.push_back(fit_link(group, "p2p", 1.0, 256, large, p2p_peer));
  group.set_options(kept);
  const Coll ops[] = {Coll::all_reduce, Coll::all_gather, Coll::reduce_scatter, Coll::all_to_all, Coll::p2p};
  for (size_t i = 0; i < fits.size(); ++i) link.set_from_fit(ops[i], fits[i].alpha, fits[i].beta, n);
  return fits;
}

constexpr int kGemmRows[] = {256, 1024, 4096};           // tokens per micro-batch
constexpr int kGemmWidths[] = {64, 128, 256, 512, 1024};  // a weight's sides

// The per-core rates of plan/cost_rates.h, measured with `threads` threads and stored per thread
// (`sync`: the ranks that measure at once, each kernel started together; null: this rank alone).
EngineRates measure_rates(const Comm* sync, int threads, std::vector<GemmClass>& gemm, double& dram_bandwidth) {
  EngineRates r;
  r.cores = machine_peak().cores;
  CacheFlusher flush;
  for (int rows : kGemmRows)
    for (int w : kGemmWidths) {
      r.gemm_fp32.add(rows, w, time_linear(rows, w, DType::f32, sync, flush) / threads);
      r.gemm_bf16.add(rows, w, time_linear(rows, w, DType::bf16, sync, flush) / threads);
    }
  for (GemmClass& g : gemm) time_gemm(g);
  for (int T : {64, 128, 256, 512}) r.attention.points.emplace_back(T, attention_seconds_per_unit(T) * threads);
  for (size_t n : {size_t(4) << 10, size_t(32) << 10, size_t(256) << 10, size_t(4) << 20})
    r.bandwidth.points.emplace_back(12.0 * n, triad_bandwidth(n) / threads);
  dram_bandwidth = r.bandwidth.points.back().second * threads;
  measure_kernel_rates(sync, threads, r, flush);
  return r;
}

// Every value a sweep measures, in one fixed order, each passed to io(double&) to read or write:
// the order the broadcast from rank 0 and the median over sweeps both rely on.
template <class F>
void visit_measured(EngineRates& rates, std::vector<GemmClass>& gemm, double& memory_bandwidth, F&& io) {
  for (GemmTable* table : {&rates.gemm_fp32, &rates.gemm_bf16})
    for (auto& [rows, curve] : table->by_rows)
      for (auto& p : curve.points) io(p.second);
  for (RateCurve* curve : {&rates.attention, &rates.bandwidth})
    for (auto& p : curve->points) io(p.first), io(p.second);
  for (RateCurve* curve : {&rates.optimizer, &rates.weight_copy, &rates.rmsnorm, &rates.rope, &rates.swiglu,
                           &rates.cross_entropy})
    for (auto& p : curve->points) io(p.second);
  for (GemmTable* table : attention_tables(rates))
    for (auto& [T, curve] : table->by_rows)
      for (auto& p : curve.points) io(p.second);
  for (GemmTable* table : cp_block_tables(rates))
    for (auto& [c, curve] : table->by_rows)
      for (auto& p : curve.points) io(p.second);
  for (GemmClass& g : gemm) io(g.flops);
  io(memory_bandwidth);
}

}  // namespace

std::vector<double> median_by_position(const std::vector<std::vector<double>>& sweeps) {
  std::vector<double> out(sweeps.empty() ? 0 : sweeps.front().size());
  std::vector<double> column(sweeps.size());
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t s = 0; s < sweeps.size(); ++s) column[s] = sweeps[s].at(i);
    std::sort(column.begin(), column.end());
    const size_t n = column.size();
    out[i] = n % 2 ? column[n / 2] : (column[n / 2 - 1] + column[n / 2]) / 2;
  }
  return out;
}

Calibration calibrate(const Comm& world, int threads, int ranks_per_machine, int sweeps) {
  Calibration c;
  omp_set_num_threads(threads);
  c.gemm = {{"square 1024", 1024, 1024, 1024}, {"few rows 256x1024x1024", 256, 1024, 1024},
            {"wide 1024x4096x512", 1024, 4096, 512}};
  // The rates are per core, measured with every core busy as a training step keeps them: by every
  // rank at once when the ranks' threads fit the cores, else by as many ranks as fill the cores
  // (the first ranks of each machine) while the others wait. Measured by rank 0 alone, the GEMM
  // rates came out ~6% faster than with both cores busy (caches and memory are shared), and every
  // layout with more ranks than cores was predicted that much too fast. A machine is a kernel, not
  // the launcher's node: two namespaced nodes on one host, each with as many ranks as the host has
  // cores, all measuring at once, put every rate at half a core's, and the planner then charged the
  // ranks' sharing of the cores a second time (1.5-1.7x too slow a step).
  const int cores = machine_peak().cores;
  const std::vector<int64_t> machines = machine_keys(world);
  const std::vector<bool> measuring_ranks = rate_measuring_ranks(machines, cores, threads);
  const bool measures = measuring_ranks[size_t(world.rank())];
  const bool all_measure = std::find(measuring_ranks.begin(), measuring_ranks.end(), false) == measuring_ranks.end();
  const Comm measuring = all_measure ? Comm{} : world.split(measures ? 1 : 0, world.rank());
  const Comm* sync = all_measure ? &world : &measuring;
  EngineRates rates;
  // Rank 0's numbers as one list of doubles, in and out (every value passes through `io`).
  std::vector<double> flat;
  auto pack = [&](bool out) {
    size_t i = 0;
    visit_measured(rates, c.gemm, c.memory_bandwidth, [&](double& x) {
      if (out) flat.push_back(x);
      else x = flat[i++];
    });
  };
  if (measures) {
    // A virtual machine's neighbours slow single timings by up to 2x for a moment; one sweep's
    // outlier at the model's shape moved a prediction by 80%. Each value is the median of whole
    // sweeps over every shape, seconds apart, so one slow moment spoils one sweep's value only.
    std::vector<std::vector<double>> by_sweep;
    for (int s = 0; s < std::max(1, sweeps); ++s) {
      rates = measure_rates(sync, threads, c.gemm, c.memory_bandwidth);
      pack(true);
      by_sweep.push_back(std::move(flat));
      flat.clear();
    }
    flat = median_by_position(by_sweep);
    pack(false);
    flat.clear();
  }
  // One rank's threads against ranks sharing the node: rank 0 keeps every core of its machine busy
  // in groups of 1, 2, 4 ... threads while the others wait (their waits sleep after a short spin).
  world.barrier();
  ThreadScaling scaling = world.rank() == 0 ? measure_thread_scaling(cores, threads, sweeps) : thread_scaling_shape(cores);
  std::vector<double> efficiencies;
  for_each_efficiency(scaling, [&](double& e) { efficiencies.push_back(e); });
  world.broadcast(efficiencies.data(), efficiencies.size(), 0);
  size_t next = 0;
  for_each_efficiency(scaling, [&](double& e) { e = efficiencies[next++]; });
  scaling.rates_threads = threads;
  if (world.rank() == 0) pack(true);
  int64_t count = int64_t(flat.size());
  world.broadcast(&count, 1, 0);
  flat.resize(size_t(count));
  world.broadcast(flat.data(), size_t(count), 0);
  if (world.rank() != 0) {
    rates = EngineRates{};
    rates.cores = machine_peak().cores;
    for (GemmTable* table : {&rates.gemm_fp32, &rates.gemm_bf16})
      for (int rows : kGemmRows)
        for (int w : kGemmWidths) table->add(rows, w, 0);  // the shapes; rank 0's rates fill them
    for (RateCurve* curve : {&rates.attention, &rates.bandwidth}) curve->points.resize(4);
    shape_kernel_rates(rates);
    pack(false);
  }
  const int n = world.size();
  double share = busy_cpu_share(world);
  world.all_reduce(&share, 1);
  rates.available_cores = std::min(double(rates.cores), share / std::max(1, n / ranks_per_machine));  // per node
  rates.busy_threads = ranks_per_machine * threads;
  ClusterSpec& cl = c.cluster = this_machine(ranks_per_machine);
  if (n > 1) {
    // Across nodes (ranks on two or more): the same-node class from the ranks of each node (every
    // node at once, as in a step), the across-node class from all ranks, whose collectives cross
    // the link as dp and ZeRO's do. On one node both classes are the world's.
    const std::vector<int>& node_of = world_rank_nodes();
    const int my_node = node_of[size_t(world.rank())];
    const bool spans = node_count() > 1;
    const Comm inside = spans ? world.split(my_node, world.rank()) : Comm{};
    const bool node_groups_even = spans && std::count(node_of.begin(), node_of.end(), node_of[0]) * node_count() == n;
    if (!spans) {
      c.links = fit_link_class(world, cl.same_node, 1);
      cl.across_nodes = cl.same_node;
    } else {
      // Every node measures its own ranks at once; rank 0's node's numbers go in the file.
      if (node_groups_even && inside.size() > 1) c.links = fit_link_class(inside, cl.same_node, 1);
      const int other_node = int(std::find_if(node_of.begin(), node_of.end(), [&](int v) { return v != node_of[0]; }) -
                                 node_of.begin());
      c.across_links = fit_link_class(world, cl.across_nodes, other_node);
      if (node_groups_even) cl.across_nodes.fit_ranks = n, cl.across_nodes.fit_ranks_per_node = n / node_count();
      c.link_cpu = measure_link_cpu(world, machines);
      cl.across_nodes.cpu_seconds_per_byte = c.link_cpu.cpu_seconds_per_byte();
    }
    // The step's own collectives (loss, gradient norm, token counts): a few scalar all-reduces.
    float x = 1;
    rates.step_overhead = 4 * time_op(world, [&] { world.all_reduce(&x, 1); });
    if (all_measure) rates.collective_overhead = collective_overhead(world, cl.link(spans));
  }
  rates.thread_scaling = scaling;
  cl.rates = rates;
  cl.name = "calibrated: " + cl.name;
  cl.devices_per_node = ranks_per_machine;
  double best_gemm = 0;
  for (const GemmClass& g : c.gemm) best_gemm = std::max(best_gemm, g.flops);
  cl.gemm_efficiency = std::min(1.0, best_gemm / cl.peak_flops);
  // The bf16 GEMM ceiling per core (0: none), at the share of the machine the fp32 peak covers.
  const HardwarePeak hw = machine_peak();
  if (hw.bf16_flops_per_core > 0) cl.peak_flops_16 = hw.bf16_flops_per_core * cl.peak_flops / hw.fma_flops_per_core;
  // Per ring step; a noisy fit's intercept can come out 0, which a cluster file may not hold.
  auto ring_latency = [](const LinkFit& ar, int ranks) { return std::max(1e-9, ar.alpha / (2.0 * (ranks - 1))); };
  if (!c.links.empty()) {
    const LinkFit& ar = c.links.front();
    const int ranks = c.across_links.empty() ? n : n / node_count();
    cl.intra_bandwidth = cl.inter_bandwidth = ar.busbw;
    cl.intra_latency = cl.inter_latency = ring_latency(ar, ranks);
  }
  if (!c.across_links.empty()) {
    cl.inter_bandwidth = c.across_links.front().busbw;
    cl.inter_latency = ring_latency(c.across_links.front(), n);
  }
  return c;
}

std::string Calibration::toml() const {
  std::string t = cluster_to_toml(cluster) + "\n[measured]\n";
  for (const GemmClass& g : gemm)
    t += fmt::format("gemm_{}x{}x{} = {:.6g}  # FLOP/s, {}\n", g.M, g.N, g.K, g.flops, g.name);
  t += fmt::format("memory_bandwidth = {:.6g}  # bytes/s, triad\n", memory_bandwidth);
  for (const auto& [prefix, fits] : {std::pair{"", &links}, std::pair{"across_nodes_", &across_links}})
    for (const LinkFit& l : *fits)
      t += fmt::format("{0}{1}_alpha = {2:.6g}  # s\n{0}{1}_beta = {3:.6g}  # s per byte\n{0}{1}_busbw = {4:.6g}  # bytes/s\n",
                       prefix, l.op, l.alpha, l.beta, l.busbw);
  for (const auto& [mode, k] : {std::pair{"blocking", &link_cpu.blocking}, std::pair{"behind", &link_cpu.behind}}) {
    if (!(k->bytes > 0)) continue;
    t += fmt::format("# rank 0's machine while the ranks at each place on the nodes all-reduced 4 MiB ({}): the "
                     "wall seconds, the bytes its ranks sent and received across, its CPU seconds (user: with the "
                     "ranks' polling; kernel: system + irq + softirq), the same over idle windows as long, and the "
                     "kernel's seconds per byte beyond the idle windows' (the machines' mean of their medians over "
                     "rounds)\n",
                     std::string(mode) == "blocking" ? "blocked in them" : "left to the comm thread, the caller asleep");
    for (const auto& [key, value] : {std::pair{"seconds", k->seconds}, std::pair{"bytes", k->bytes},
                                     std::pair{"user_seconds", k->user}, std::pair{"kernel_seconds", k->kernel},
                                     std::pair{"idle_user_seconds", k->idle_user},
                                     std::pair{"idle_kernel_seconds", k->idle_kernel},
                                     std::pair{"cpu_seconds_per_byte", k->per_byte}})
      t += fmt::format("across_nodes_link_cpu_{}_{} = {:.6g}\n", mode, key, value);
  }
  return t;
}

}  // namespace ff
