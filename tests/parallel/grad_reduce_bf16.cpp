// grad_reduce_dtype = bf16 under mpirun -np 2, for one ZeRO stage:
//   grad_reduce_bf16 ZERO
// One parameter group of three odd-sized segments over both ranks, two micro-batches. Checks
//   - the bytes each reduction puts on the wire: 2 per element (fp32's 4), from the Comm counters;
//   - the summed gradient every rank holds, element by element and bitwise, against the value
//     written out here: each rank's fp32 contribution rounded to bf16 (RNE), the two added in
//     fp32, the sum rounded once to bf16, widened; under ZeRO 0/1 the contribution is the fp32
//     sum of both micro-batches (accumulated before the one reduction), under ZeRO 2/3 each
//     micro-batch is reduced on its own and the results add in the fp32 shard;
//   - the ledger's gradient category against FORMULAS.md: 4Ψ + 2Ψ (fp32 accumulation + the bf16
//     wire copy, the gradient part of the 20Ψ formula) under ZeRO 0/1, 4Ψ/N under ZeRO 2/3
//     (the bf16 staging is per-segment workspace), and 4Ψ, 4Ψ, 4Ψ/N with fp32 on the wire.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "core/dtype.h"
#include "core/memory.h"
#include "parallel/grouped_state.h"
#include "group_toys.h"

using namespace ff;

namespace {

constexpr size_t kTotal = 3001;
const AdamWConfig kAdam{0.9f, 0.95f, 1e-8f, 0.1f};

// Rank r's gradient of element i in micro-batch mb: values spread over many binades, so the bf16
// rounding differs from fp32's in most elements.
float local_grad(int r, int mb, size_t i) {
  return float(0.013 * (1 + r + 2 * mb) * std::cos(0.71 * double(i) + 0.9 * r + 1.7 * mb) *
               std::exp(0.004 * double(i % 997)));
}

float bf16_round(float x) { return bf16_to_f32(f32_to_bf16(x)); }

// The collective's sum of the two ranks' contributions (each rounded to bf16), rounded once.
float wire_sum(float a, float b) { return bf16_round(bf16_round(a) + bf16_round(b)); }

size_t chunk(size_t count, int n, int r) { return count / size_t(n) + (size_t(r) < count % size_t(n) ? 1 : 0); }

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (world.size() != 2 || argc != 2) return std::fprintf(stderr, "usage: mpirun -np 2 grad_reduce_bf16 ZERO\n"), 2;
  const int zero = std::atoi(argv[1]), rank = world.rank();
  ParamGroupSpec g;
  g.name = "dense", g.comm = &world;
  testkit::add_segment(g, 0, 1001);
  testkit::add_segment(g, 1001, 1203);
  testkit::add_segment(g, 2204, 797);
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) std::printf("rank %d zero=%d: %s\n", rank, zero, what.c_str());
    failures += !ok;
  };

  for (DType wire : {DType::f32, DType::bf16}) {
    const auto before = MemoryLedger::instance().snapshot();
    DataParallelConfig cfg;
    cfg.zero = zero, cfg.bucket_mb = 0.001, cfg.sync = GradSync::overlap;
    cfg.grad_reduce = wire;
    GroupedState state({g}, nullptr, kAdam, cfg, nullptr);
    const auto after = MemoryLedger::instance().snapshot();
    double shard = 0;
    for (const ParamSegment& s : g.segments) shard += double(chunk(s.count, 2, rank));
    const double want_grads = zero >= 2 ? 4 * shard : (wire == DType::bf16 ? 6.0 : 4.0) * kTotal;
    const double got_grads = double(after.current[int(MemCategory::grads)] - before.current[int(MemCategory::grads)]);
    check(got_grads == want_grads, std::string(dtype_name(wire)) + ": gradient bytes " + std::to_string(got_grads) +
                                       ", formula " + std::to_string(want_grads));

    world.reset_stats();
    state.zero_grads();
    for (int mb = 0; mb < 2; ++mb) {
      GradSink& sink = state.grads(mb == 1);
      for (size_t s = g.segments.size(); s-- > 0;) {
        const ParamSegment& seg = g.segments[s];
        float* x = sink.acquire(seg).f32();
        for (size_t e = 0; e < seg.count; ++e) x[e] += local_grad(rank, mb, seg.offset + e);
        sink.release(seg);
      }
    }
    state.finish_grads();
    const auto kind = zero == 0 ? CommOpKind::all_reduce : CommOpKind::reduce_scatter;
    const size_t reductions = zero >= 2 ? 2 : 1;  // ZeRO 2/3 reduce every micro-batch
    const size_t want_bytes = reductions * kTotal * (wire == DType::bf16 ? 2 : 4);
    check(world.stats().bytes_of(kind) == want_bytes,
          std::string(dtype_name(wire)) + ": bytes " + std::to_string(world.stats().bytes_of(kind)) + ", want " +
              std::to_string(want_bytes));

    // Every element this rank holds against the value written out above (bf16 wire only: the
    // fp32 wire is the existing path, checked by the other tests).
    size_t bad = 0, checked = 0;
    double worst_vs_f32 = 0;
    for (const ParamSegment& seg : g.segments) {
      size_t n = 0;
      const float* got = state.segment_grads(seg, &n);
      // The chunk this rank holds starts after rank 0's under ZeRO (Comm's split: first ranks longer).
      const size_t lo = zero == 0 ? 0 : (rank == 0 ? 0 : chunk(seg.count, 2, 0));
      for (size_t e = 0; e < n; ++e) {
        const size_t i = seg.offset + lo + e;
        const float a0 = local_grad(0, 0, i), a1 = local_grad(1, 0, i), b0 = local_grad(0, 1, i),
                    b1 = local_grad(1, 1, i);
        float want;
        if (wire == DType::f32) want = got[e];
        else if (zero >= 2) want = 0.0f + wire_sum(a0, a1) + wire_sum(b0, b1);
        else want = wire_sum(a0 + b0, a1 + b1);
        bad += std::memcmp(&want, &got[e], 4) != 0;
        // Against the size of what was summed (the sum itself may cancel to near zero).
        const double exact = double(a0) + a1 + b0 + b1;
        const double scale = std::fabs(a0) + std::fabs(a1) + std::fabs(b0) + std::fabs(b1);
        worst_vs_f32 = std::max(worst_vs_f32, std::fabs(got[e] - exact) / scale);
        ++checked;
      }
    }
    check(bad == 0, std::string(dtype_name(wire)) + ": " + std::to_string(bad) + " of " + std::to_string(checked) +
                        " summed gradients differ from the bf16 wire sum written out here");
    if (wire == DType::bf16)
      check(worst_vs_f32 <= 1.0 / 128, "bf16 wire sum further than 2^-7 of the summands' size from the exact sum");
    if (rank == 0)
      std::printf("zero=%d grad_reduce_dtype=%s: %zu wire bytes, gradient ledger %.0f bytes (formula), %zu elements "
                  "checked, worst |sum - exact| / sum of |summands| %.2e\n",
                  zero, dtype_name(wire), size_t(world.stats().bytes_of(kind)), want_grads, checked, worst_vs_f32);
  }
  world.all_reduce(&failures, 1);
  if (rank == 0) std::printf("%s\n", failures == 0 ? "ok" : "FAIL");
  return failures == 0 ? 0 : 1;
}
