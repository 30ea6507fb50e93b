// Two parameter groups sharded over different communicators, under mpirun -np 4:
//   param_groups ZERO
// A toy flat layout of 4001 elements holds group A (over all four ranks) and group B (over the
// pairs {0, 1} and {2, 3}) in interleaved segments of odd sizes, so routing and uneven ZeRO
// chunks are both exercised. Each rank checks
//   - its model-state bytes by category against the per-group ZeRO formulas (each group with
//     its own Ψ and N, chunks split as Comm splits them),
//   - that the parameters the model acquires are the loaded (then updated) values,
//   - that each group's gradients travel over its own communicator (bytes per collective),
//   - the gradient norm (plain and with a weighted range straddling both groups),
//   - and, after two optimizer steps, parameters and AdamW moments against a serial AdamW written
//     out here in double precision from the gradients summed over each group's ranks.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "core/memory.h"
#include "parallel/grouped_state.h"
#include "group_toys.h"
#include "fill_state.h"

using namespace ff;
using testkit::add_segment;
using testkit::close;

namespace {

constexpr size_t kTotal = 4001;
constexpr float kLr = 0.01f;
const AdamWConfig kAdam{0.9f, 0.95f, 1e-8f, 0.1f};

// Rank r's local gradient of flat element i at step k (distinct per rank, so a missing or extra
// rank in a sum shows).
double local_grad(int r, int k, size_t i) {
  return 0.01 * (1 + r) * std::cos(0.37 * double(i) + 1.3 * r + 0.7 * k);
}

// Elements of a segment this rank holds under a split over n ranks (the first count % n ranks
// hold one more), independent of the code under test.
size_t chunk(size_t count, int n, int r) {
  return count / size_t(n) + (size_t(r) < count % size_t(n) ? 1 : 0);
}

// params, grads, optimizer bytes of one group under ZeRO stage z (FORMULAS.md: 16Ψ, 8Ψ + 8Ψ/N,
// 4Ψ + 12Ψ/N, 16Ψ/N, with Ψ/N the exact shard).
void add_formula(double bytes[3], const ParamGroupSpec& g, int z, int n, int r) {
  double psi = 0, shard = 0;
  for (const ParamSegment& s : g.segments) psi += double(s.count), shard += double(chunk(s.count, n, r));
  if (z == 0 || n == 1) shard = psi;
  bytes[0] += 4 * (z == 3 ? shard : psi);
  bytes[1] += 4 * (z >= 2 ? shard : psi);
  bytes[2] += 8 * shard;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (world.size() != 4 || argc != 2)
    return std::fprintf(stderr, "usage: mpirun -np 4 param_groups ZERO\n"), 2;
  const int zero = std::atoi(argv[1]), rank = world.rank();
  const Comm all = world.split(0, rank);          // group A's communicator, with its own counters
  const Comm pair = world.split(rank / 2, rank);  // group B's
  const int pair_lo = rank / 2 * 2;

  ParamGroupSpec a, b;
  a.name = "A", a.kind = ParamGroupKind::dense, a.comm = &all;
  b.name = "B", b.kind = ParamGroupKind::expert, b.comm = &pair;
  add_segment(a, 0, 1001);
  add_segment(b, 1001, 600);
  add_segment(a, 1601, 2003);
  add_segment(b, 3604, 397);
  const std::vector<ParamSegment> order = {{0, 1001}, {1001, 600}, {1601, 2003}, {3604, 397}};
  // Per flat element: its group's ranks and whether it decays.
  std::vector<char> in_b(kTotal, 0), decays(kTotal, 0);
  for (const ParamSegment& s : b.segments)
    for (size_t i = s.offset; i < s.end(); ++i) in_b[i] = 1;
  for (const ParamGroupSpec* g : {&a, &b})
    for (const ParamTensorSpan& t : g->tensors)
      for (size_t i = t.offset; i < t.offset + t.count; ++i) decays[i] = t.decay;
  auto summed_grad = [&](int k, size_t i) {
    double s = 0;
    for (int r = in_b[i] ? pair_lo : 0; r < (in_b[i] ? pair_lo + 2 : 4); ++r) s += local_grad(r, k, i);
    return s;
  };
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) std::printf("rank %d zero=%d: %s\n", rank, zero, what.c_str());
    failures += !ok;
  };

  const auto before = MemoryLedger::instance().snapshot();
  DataParallelConfig dp_config;
  dp_config.zero = zero, dp_config.bucket_mb = 0.001, dp_config.sync = GradSync::overlap;
  GroupedState state({a, b}, nullptr, kAdam, dp_config, nullptr);
  const auto after = MemoryLedger::instance().snapshot();
  double want[3] = {0, 0, 0};
  add_formula(want, a, zero, 4, rank);
  add_formula(want, b, zero, 2, rank - pair_lo);
  const MemCategory cats[3] = {MemCategory::params, MemCategory::grads, MemCategory::optimizer};
  for (int c = 0; c < 3; ++c) {
    const double got = double(after.current[int(cats[c])] - before.current[int(cats[c])]);
    check(got == want[c], "category " + std::to_string(c) + ": " + std::to_string(got) + " bytes, formula " +
                              std::to_string(want[c]));
  }

  // The serial reference, in double precision.
  std::vector<double> p(kTotal), m(kTotal, 0), v(kTotal, 0);
  std::vector<float> p0(kTotal), zeros(kTotal, 0.0f);
  for (size_t i = 0; i < kTotal; ++i) p[i] = p0[i] = float(0.5 * std::sin(0.1 * double(i)));
  testkit::fill_state(state, p0.data(), zeros.data(), zeros.data());

  for (int k = 1; k <= 2; ++k) {
    state.zero_grads();
    // Forward: every segment in layout order, with the next as the prefetch hint.
    ParamSource& src = state.params();
    double worst = 0;
    for (size_t s = 0; s < order.size(); ++s) {
      const float* x = src.acquire(order[s], s + 1 < order.size() ? order[s + 1] : ParamSegment{}).f32();
      for (size_t e = 0; e < order[s].count; ++e)
        worst = std::max(worst, std::fabs(x[e] - p[order[s].offset + e]));
      src.release(order[s]);
    }
    check(worst <= 1e-6, "acquired parameters differ from the expected ones by " + std::to_string(worst));
    // Backward: segments in reverse, as the model completes them.
    all.reset_stats();
    pair.reset_stats();
    GradSink& sink = state.grads(true);
    for (size_t s = order.size(); s-- > 0;) {
      float* g = sink.acquire(order[s]).f32();
      for (size_t e = 0; e < order[s].count; ++e) g[e] += float(local_grad(rank, k, order[s].offset + e));
      sink.release(order[s]);
    }
    state.finish_grads();
    const auto kind = zero == 0 ? CommOpKind::all_reduce : CommOpKind::reduce_scatter;
    check(all.stats().bytes_of(kind) == 4 * 3004 && pair.stats().bytes_of(kind) == 4 * 997,
          "gradient bytes over A's and B's communicators " + std::to_string(all.stats().bytes_of(kind)) +
              ", " + std::to_string(pair.stats().bytes_of(kind)) + " (want 12016, 3988)");

    double norm_sq = 0, part_sq = 0;
    for (size_t i = 0; i < kTotal; ++i) {
      const double g = summed_grad(k, i);
      norm_sq += g * g;
      if (i >= 900 && i < 1200) part_sq += g * g;  // straddles A's first and B's first segment
    }
    check(close(state.grad_square_sum({}), norm_sq), "gradient square sum");
    check(close(state.grad_square_sum({{900, 300, 0.25}}), norm_sq - 0.75 * part_sq),
          "weighted gradient square sum");

    state.optimizer_step(kLr, k);
    testkit::serial_adamw_step(p, m, v, decays, kAdam, kLr, k, [&](size_t i) { return summed_grad(k, i); });
  }

  std::vector<float> gp(kTotal), gm(kTotal), gv(kTotal);
  state.gather_full(gp.data(), gm.data(), gv.data());
  double worst_p = 0, worst_m = 0, worst_v = 0;
  bool ok = true;
  for (size_t i = 0; i < kTotal; ++i) {
    ok = ok && close(gp[i], p[i]) && close(gm[i], m[i]) && close(gv[i], v[i]);
    worst_p = std::max(worst_p, std::fabs(gp[i] - p[i]));
    worst_m = std::max(worst_m, std::fabs(gm[i] - m[i]));
    worst_v = std::max(worst_v, std::fabs(gv[i] - v[i]));
  }
  check(ok, "state after two steps differs from the serial AdamW");
  if (rank == 0)
    std::printf(
        "zero=%d, groups A (4 ranks) and B (pairs): bytes params %.0f grads %.0f optimizer %.0f (formula); "
        "after 2 steps worst |param| diff %.2e, |m| %.2e, |v| %.2e\n",
        zero, want[0], want[1], want[2], worst_p, worst_m, worst_v);
  world.all_reduce(&failures, 1);
  if (rank == 0) std::printf("%s\n", failures == 0 ? "ok" : "FAIL");
  return failures == 0 ? 0 : 1;
}
