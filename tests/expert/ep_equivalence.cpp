// Expert parallelism against the serial MoE run, under mpirun:
//   ep_equivalence EP ZERO PP [capacity | tp2 | tp2sp] [overlap]
// Every rank trains `tiny` with both blocks MoE (4 experts, top-2, a shared expert; capacity
// factor 1.5 with `capacity`, else dropless) for 20 steps, experts split over ep ranks of
// dp = world / (pp tp); tp2: tensor parallel 2 (MoE blocks replicated over it), tp2sp with sp.
// Rank 0 then trains the serial model on the same micro-batches (micro-batch 2,
// accumulation = the parallel run's micro-batches per step x dp) and compares, step by step, the
// loss and gradient norm (1e-5 relative) and the tokens routed to every expert of every block
// (1e-5 relative: the routing decisions), and the final weights (1e-4). The routing must be worth
// comparing: every expert of every block gets tokens in every step and the load is uneven (the
// aux-loss-free bias keeps moving it). With dp = ep (one expert group) and dropless routing, each
// rank's all-to-all bytes of one more step are checked against the formula from the routed
// counts. With `overlap`, the layout is trained again with `ep_overlap`
// (all-to-alls in flight while the block computes): losses, gradient norms and weights bitwise
// those of the blocking exchange.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "shared_data.h"
#include "train_fixtures.h"
#include "train/trainer.h"

using namespace ff;

namespace {

constexpr int kSteps = 20, kResumed = 2, kMicro = 2, kSeq = 16;  // 32 tokens per micro-batch

TrainConfig moe_tiny(const std::string& data, int dp, int ep, int pp, int accum, int zero, bool capacity,
                     int tp = 1, bool sp = false, bool overlap = false) {
  TrainConfig c = testkit::tiny_config(data);
  c.steps = kSteps + kResumed;  // the loops below run the steps; the schedule spans them all
  c.micro_batch = kMicro;
  c.model.seq_len = kSeq;
  c.grad_accum = accum;
  c.dp = dp, c.ep = ep, c.pp = pp, c.zero = zero, c.tp = tp, c.sp = sp;
  c.ep_overlap = overlap;
  c.model.moe.n_experts = 4;
  c.model.moe.top_k = 2;
  c.model.moe.expert_ffn_dim = 48;
  c.model.moe.shared_experts = 1;
  c.model.moe.router_bias_update = 1e-3f;  // moves the selection every step: layouts must agree on it
  if (capacity) c.model.moe.capacity_factor = 1.5f;
  return c;
}

// Every step's routed counts, flattened (block, expert).
std::vector<double> routed_now(const Trainer& t) {
  std::vector<double> r;
  for (const auto& layer : t.moe_summary()->routed) r.insert(r.end(), layer.begin(), layer.end());
  return r;
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

// All-to-all bytes of one step on this rank: per MoE block and micro-batch, the counts (E ints)
// once, then dispatch (rows sent = N k, dropless) and combine (rows received = the tokens routed
// to this rank's experts) forward, and the same two on the gradients backward.
int check_bytes(Trainer& t, const Mesh& mesh) {
  const Comm& ep = mesh.group(MeshGroup::ep);
  const TrainConfig& c = t.config();
  ep.reset_stats();
  t.train_step();
  const MoeStepSummary& s = *t.moe_summary();
  const int E = c.model.moe.n_experts, El = E / ep.size(), first = ep.rank() * El;
  const double N = double(kMicro) * c.model.seq_len, K = c.model.moe.top_k, C = c.model.dim;
  double received = 0;
  for (const auto& layer : s.routed)
    for (int e = first; e < first + El; ++e) received += layer[size_t(e)];
  const double blocks = double(s.layers.size()), micro = c.grad_accum;
  const double want_v = 4 * C * 2 * (blocks * micro * N * K + received), want_counts = 4.0 * E * blocks * micro;
  const double got_v = double(ep.stats().bytes_of(CommOpKind::all_to_allv)),
               got_counts = double(ep.stats().bytes_of(CommOpKind::all_to_all));
  const bool ok = got_v == want_v && got_counts == want_counts;
  std::printf("rank %d: all_to_allv %.0f B (formula %.0f), counts all_to_all %.0f B (formula %.0f): %s\n",
              mesh.world().rank(), got_v, want_v, got_counts, want_counts, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

// The serial trainer resumed from the parallel run's checkpoint (rank 0's folder, where the
// leader wrote it): bitwise the parallel run's weights, then the same two steps.
int check_resumed(const Trainer& run, const std::vector<float>& weights, const TrainConfig& serial_cfg,
                  const std::string& out) {
  Trainer resumed(serial_cfg, out, nullptr);
  resumed.quiet = true;
  const bool same_weights = resumed.full_params() == weights && resumed.step() == kSteps;
  double worst = 0;
  for (int s = 0; s < kResumed; ++s) {
    const StepRecord r = resumed.train_step();
    const StepRecord& p = run.history()[size_t(kSteps + s)];
    worst = std::max({worst, rel(p.loss, r.loss), rel(p.grad_norm, r.grad_norm)});
  }
  const bool ok = same_weights && worst <= 1e-5;
  std::printf("checkpoint resumed serially: weights %s, next %d steps' loss and grad norm worst rel diff %.2e: %s\n",
              same_weights ? "bitwise equal" : "DIFFER", kResumed, worst, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

// The same layout with the all-to-alls overlapped: every step and the final weights bitwise equal
// (the overlap reorders only computations that do not depend on the exchange).
int check_overlap(Trainer& run, const TrainConfig& cfg, const Mesh& mesh) {
  TrainConfig c = cfg;
  c.ep_overlap = true;
  Trainer twin(c, testkit::temp_dir("ep_overlap"), &mesh);
  twin.quiet = true;
  for (size_t s = 0; s < run.history().size(); ++s) twin.train_step();
  const std::vector<float> a = run.full_params(), b = twin.full_params();
  bool same = a == b && twin.history().size() == run.history().size();
  for (size_t s = 0; same && s < run.history().size(); ++s)
    same = twin.history()[s].loss == run.history()[s].loss && twin.history()[s].grad_norm == run.history()[s].grad_norm;
  if (mesh.world().rank() == 0)
    std::printf("ep_overlap: %zu steps' loss, grad norm and the final weights %s\n", run.history().size(),
                same ? "bitwise equal: ok" : "DIFFER: FAIL");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  if (argc < 4) return std::fprintf(stderr, "usage: ep_equivalence EP ZERO PP [capacity | tp2 | tp2sp] [overlap]\n"), 2;
  const int ep = std::atoi(argv[1]), zero = std::atoi(argv[2]), pp = std::atoi(argv[3]);
  const std::string extra = argc > 4 && std::string(argv[4]) != "overlap" ? argv[4] : "";
  const bool overlap = std::string(argv[argc - 1]) == "overlap";
  const bool capacity = extra == "capacity", sp = extra == "tp2sp";
  const int tp = extra.rfind("tp2", 0) == 0 ? 2 : 1;
  const int dp = world.size() / (pp * tp), accum = pp > 1 ? pp : 1;
  const std::string data = testkit::shared_tiny_data_dir(world);
  const Mesh mesh(world, MeshDegrees{.dp = dp, .tp = tp, .pp = pp, .ep = ep});

  const std::string out = testkit::temp_dir("ep");
  Trainer run(moe_tiny(data, dp, ep, pp, accum, zero, capacity, tp, sp), out, &mesh);
  run.quiet = true;
  std::vector<std::vector<double>> routed;
  for (int s = 0; s < kSteps; ++s) {
    run.train_step();
    routed.push_back(routed_now(run));
  }
  const std::vector<float> weights = run.full_params();
  // A checkpoint of this layout, then two more steps: the serial run resumed from it must take
  // the same two (parameters and AdamW moments moved from ep ranks to one).
  run.save();
  for (int s = 0; s < kResumed; ++s) run.train_step();
  int failures = 0;
  if (world.rank() == 0) {
    Trainer serial(moe_tiny(data, 1, 1, 1, accum * dp, 0, capacity), testkit::temp_dir("ep_serial"), nullptr);
    serial.quiet = true;
    double worst_loss = 0, worst_norm = 0, worst_routed = 0, worst_weight = 0, dropped = 0;
    double least = INFINITY, most = 0;  // tokens of the least and most loaded expert, any block, any step
    for (int s = 0; s < kSteps; ++s) {
      const StepRecord r = serial.train_step();
      worst_loss = std::max(worst_loss, rel(run.history()[size_t(s)].loss, r.loss));
      worst_norm = std::max(worst_norm, rel(run.history()[size_t(s)].grad_norm, r.grad_norm));
      const std::vector<double> want = routed_now(serial);
      for (size_t i = 0; i < want.size(); ++i) worst_routed = std::max(worst_routed, rel(routed[size_t(s)][i], want[i]));
      if (want.size() != routed[size_t(s)].size()) worst_routed = INFINITY;
      for (double n : want) least = std::min(least, n), most = std::max(most, n);
      for (double d : serial.moe_summary()->dropped) dropped = std::max(dropped, d);
    }
    const std::vector<float> serial_weights = serial.full_params();
    for (size_t i = 0; i < serial_weights.size(); ++i)
      worst_weight = std::max(worst_weight, double(std::fabs(weights[i] - serial_weights[i])));
    if (weights.size() != serial_weights.size()) worst_weight = INFINITY;
    const bool learned = serial.history().back().loss < serial.history().front().loss;
    // Capacity runs must drop routes, dropless ones none, or the case tests nothing.
    const bool drops_right = capacity ? dropped > 0 : dropped == 0;
    const bool routing_varied = least > 0 && most > 1.2 * least;
    const bool ok = worst_loss <= 1e-5 && worst_norm <= 1e-5 && worst_routed <= 1e-5 && worst_weight <= 1e-4 &&
                    learned && drops_right && routing_varied;
    std::printf("ep=%d dp=%d tp=%d%s pp=%d zero=%d%s: worst step-loss rel diff %.2e, grad-norm %.2e, tokens-per-expert "
                "%.2e (tol 1e-5), weights %.2e (tol 1e-4) over %d steps; max dropped fraction %.3f, tokens per "
                "expert %.0f..%.0f, serial loss %.4f -> %.4f: %s\n",
                ep, dp, tp, sp ? " (sp)" : "", pp, zero, capacity ? " capacity 1.5" : "", worst_loss, worst_norm,
                worst_routed, worst_weight, kSteps, dropped, least, most, serial.history().front().loss,
                serial.history().back().loss, ok ? "ok" : "FAIL");
    failures += !ok;
    failures += check_resumed(run, weights, moe_tiny(data, 1, 1, 1, accum * dp, 0, capacity), out);
  }
  if (overlap) failures += check_overlap(run, moe_tiny(data, dp, ep, pp, accum, zero, capacity, tp, sp), mesh);
  if (ep == dp && pp == 1 && !capacity) failures += check_bytes(run, mesh);
  world.all_reduce(&failures, 1);
  if (world.rank() == 0) std::printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
