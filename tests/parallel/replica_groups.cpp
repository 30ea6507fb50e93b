// Parameter groups carrying replica ranges, under mpirun -np 4 laid out as tp 2 x dp 2:
//   replica_groups ZERO
// tp = the pairs {0, 1}, {2, 3}; dp = {0, 2}, {1, 3}. Two groups (A: segments 0 and 2, B: segment
// 1) are reduced and sharded over dp, and carry ranges held by both ranks of a tp pair: some
// summed over tp (partial gradients, as the norm weights under sequence parallelism or a shared
// kv head), some not (whole copies, as the norm weights without it). Two micro-batches per step,
// two steps. Each rank checks, in closed form:
//   - the summed gradient (through AdamW's first moment, which after a step from zero is
//     (1 - beta1) g): elements in summed ranges hold the sum over all four ranks (tp, then dp),
//     every other element the sum over this rank's dp pair;
//   - the tp traffic: adjacent summed ranges of one segment go out as one all-reduce, once per
//     step when the state accumulates micro-batches (ZeRO 0, 1), every micro-batch otherwise;
//   - the gradient norm: each replicated element weighs 1/2, so the tp pair counts it once, and
//     an extra weighted range adds its own weight;
//   - that a range summed over a communicator of the wrong size is refused.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "parallel/grouped_state.h"
#include "group_toys.h"
#include "fill_state.h"

using namespace ff;
using testkit::add_segment;
using testkit::close;

namespace {

constexpr size_t kTotal = 3000;
constexpr int kMicro = 2;
constexpr float kLr = 0.01f;
const AdamWConfig kAdam{0.9f, 0.95f, 1e-8f, 0.1f};

// Rank r's gradient of flat element i at step k, micro-batch j (distinct per rank and micro-batch,
// so a missing, extra or repeated term in a sum shows).
double local_grad(int r, int k, int j, size_t i) {
  return 0.01 * (1 + r) * std::cos(0.37 * double(i) + 1.3 * r + 0.7 * k + 0.3 * j);
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (world.size() != 4 || argc != 2)
    return std::fprintf(stderr, "usage: mpirun -np 4 replica_groups ZERO\n"), 2;
  const int zero = std::atoi(argv[1]), rank = world.rank();
  const Comm tp = world.split(rank / 2, rank);
  const Comm dp = world.split(rank % 2, rank);

  ParamGroupSpec a, b;
  a.name = "A", a.comm = &dp;
  b.name = "B", b.kind = ParamGroupKind::expert, b.comm = &dp;
  add_segment(a, 0, 1000);
  add_segment(b, 1000, 800);
  add_segment(a, 1800, 1200);
  a.replicas = {{100, 50, 2, &tp}, {150, 30, 2, &tp}, {500, 20, 2, nullptr}, {2993, 7, 2, &tp}};
  b.replicas = {{1000, 64, 2, &tp}, {1793, 7, 2, nullptr}};
  const std::vector<ParamSegment> order = {{0, 1000}, {1000, 800}, {1800, 1200}};
  // Per element: summed over tp, replicated (norm weight 1/2), decays.
  std::vector<char> summed(kTotal, 0), replicated(kTotal, 0), decays(kTotal, 0);
  for (const ParamGroupSpec* g : {&a, &b}) {
    for (const ReplicaRange& r : g->replicas)
      for (size_t i = r.offset; i < r.offset + r.count; ++i)
        summed[i] = r.sum_over != nullptr, replicated[i] = 1;
    for (const ParamTensorSpan& t : g->tensors)
      for (size_t i = t.offset; i < t.offset + t.count; ++i) decays[i] = t.decay;
  }
  const size_t summed_elements = 50 + 30 + 7 + 64;
  const int all_reduces = 3;  // [100, 180) as one, [2993, 3000), [1000, 1064)
  auto summed_grad = [&](int k, size_t i) {
    double s = 0;
    for (int r = 0; r < 4; ++r)
      if (summed[i] || r % 2 == rank % 2)
        for (int j = 0; j < kMicro; ++j) s += local_grad(r, k, j, i);
    return s;
  };
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) std::printf("rank %d zero=%d: %s\n", rank, zero, what.c_str());
    failures += !ok;
  };

  DataParallelConfig dp_config;
  dp_config.zero = zero, dp_config.bucket_mb = 0.001, dp_config.sync = GradSync::overlap;
  GroupedState state({a, b}, nullptr, kAdam, dp_config, nullptr);
  std::vector<double> p(kTotal), m(kTotal, 0), v(kTotal, 0);
  std::vector<float> p0(kTotal), zeros(kTotal, 0.0f);
  for (size_t i = 0; i < kTotal; ++i) p[i] = p0[i] = float(0.5 * std::sin(0.1 * double(i)));
  testkit::fill_state(state, p0.data(), zeros.data(), zeros.data());

  double worst_m = 0;
  for (int k = 1; k <= 2; ++k) {
    state.zero_grads();
    tp.reset_stats();
    for (int j = 0; j < kMicro; ++j) {
      GradSink& sink = state.grads(j + 1 == kMicro);
      for (size_t s = order.size(); s-- > 0;) {
        float* g = sink.acquire(order[s]).f32();
        for (size_t e = 0; e < order[s].count; ++e)
          g[e] += float(local_grad(rank, k, j, order[s].offset + e));
        sink.release(order[s]);
      }
    }
    state.finish_grads();
    const int passes = zero <= 1 ? 1 : kMicro;
    const auto& st = tp.stats();
    check(st.calls_of(CommOpKind::all_reduce) == uint64_t(passes * all_reduces) &&
              st.bytes_of(CommOpKind::all_reduce) == uint64_t(passes) * 4 * summed_elements,
          "tp all-reduces " + std::to_string(st.calls_of(CommOpKind::all_reduce)) + " calls, " +
              std::to_string(st.bytes_of(CommOpKind::all_reduce)) + " bytes; want " +
              std::to_string(passes * all_reduces) + ", " + std::to_string(passes * 4 * summed_elements));

    double norm_sq = 0, extra_sq = 0;
    for (size_t i = 0; i < kTotal; ++i) {
      const double g = summed_grad(k, i);
      norm_sq += (replicated[i] ? 0.5 : 1.0) * g * g;
      if (i >= 1200 && i < 1300) extra_sq += g * g;
    }
    check(close(state.grad_square_sum({}), norm_sq), "gradient square sum with replicas weighted 1/2");
    check(close(state.grad_square_sum({{1200, 100, 0.25}}), norm_sq - 0.75 * extra_sq),
          "gradient square sum with an extra weighted range");

    state.optimizer_step(kLr, k);
    testkit::serial_adamw_step(p, m, v, decays, kAdam, kLr, k, [&](size_t i) { return summed_grad(k, i); });
    std::vector<float> gp(kTotal), gm(kTotal), gv(kTotal);
    state.gather_full(gp.data(), gm.data(), gv.data());
    bool ok = true;
    for (size_t i = 0; i < kTotal; ++i) {
      ok = ok && close(gm[i], m[i]) && close(gv[i], v[i]) && close(gp[i], p[i]);
      worst_m = std::max(worst_m, std::fabs(gm[i] - m[i]));
    }
    check(ok, "step " + std::to_string(k) + ": state differs from AdamW on the closed-form sums");
  }

  ParamGroupSpec wrong = a;
  wrong.replicas = {{100, 50, 2, &world}};
  std::string error;
  try {
    GroupLayout l(wrong, nullptr);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  check(error.find("held by 2 ranks but summed over 4") != std::string::npos,
        "a sum over the wrong ranks was not refused (got '" + error + "')");

  if (rank == 0)
    std::printf("zero=%d: %zu elements summed over tp in %d all-reduces per pass; worst |m| diff %.2e\n",
                zero, summed_elements, all_reduces, worst_m);
  world.all_reduce(&failures, 1);
  if (rank == 0) std::printf("%s\n", failures == 0 ? "ok" : "FAIL");
  return failures == 0 ? 0 : 1;
}
